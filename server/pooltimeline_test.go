package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPoolTimelineRoutes: the timeline and the holders of a pool over the API, from a run
// that held db; unknown pools are 404, a bad window or time a 400 naming it.
func TestPoolTimelineRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	if rec := b.trigger(t, "urgent", "u1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if st := b.waitRunEnd(t, "urgent", "u1"); st != "success" {
		t.Fatalf("urgent ended %s", st)
	}
	// The server's clock is fixed (the goldens'); the daemon's is the real one.
	end := "end=" + time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	for _, window := range []string{"", "window=hour", "window=day", "window=week"} {
		var tl PoolTimelineJSON
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/db/timeline?"+window+"&"+end, ""), &tl); err != nil {
			t.Fatal(err)
		}
		want, _ := TimelineWindowNamed(strings.TrimPrefix(window, "window="))
		if tl.Window != want.Name || len(tl.Buckets) != want.Buckets || tl.Peak != 1 || tl.Slots != 1 || tl.To.Sub(tl.From) != want.Span {
			t.Fatalf("%s: window %s, %d buckets, peak %d, slots %d", window, tl.Window, len(tl.Buckets), tl.Peak, tl.Slots)
		}
		var at time.Time
		for _, bk := range tl.Buckets {
			if bk.Peak == 1 {
				at = bk.PeakAt
				break
			}
		}
		var hs PoolHoldersJSON
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/db/holders?at="+at.Format(time.RFC3339Nano), ""), &hs); err != nil {
			t.Fatal(err)
		}
		if hs.Used != 1 || len(hs.Holders) != 1 || hs.Holders[0].DAGID != "urgent" || hs.Holders[0].DAGRunID != "u1" ||
			hs.Holders[0].TaskID != "fix" || hs.Holders[0].TryNumber != 1 || hs.Holders[0].Slots != 1 || hs.Holders[0].EndedAt == nil {
			t.Errorf("%s: holders at the peak (%s): %+v", window, at, hs)
		}
	}
	var now PoolHoldersJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/db/holders", ""), &now); err != nil || now.Used != 0 || now.Holders == nil {
		t.Errorf("holders now: %+v %v", now, err)
	}
	for path, want := range map[string]int{
		"/api/v1/pools/nosuch/timeline":                 http.StatusNotFound,
		"/api/v1/pools/nosuch/holders":                  http.StatusNotFound,
		"/api/v1/pools/db/timeline?window=month":        http.StatusBadRequest,
		"/api/v1/pools/db/timeline?end=yesterday":       http.StatusBadRequest,
		"/api/v1/pools/db/holders?at=noon":              http.StatusBadRequest,
		"/api/v1/pools/db/holders?when=2026-12-02":      http.StatusBadRequest,
		"/api/v1/pools/db/timeline?window=day&at=today": http.StatusBadRequest,
	} {
		rec := b.do(t, http.MethodGet, path, "", testToken)
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
			continue
		}
		if want == http.StatusBadRequest {
			p := problemOf(t, rec)
			name := path[strings.IndexByte(path, '?')+1:]
			name = name[strings.LastIndexByte(name, '&')+1 : strings.IndexByte(name[strings.LastIndexByte(name, '&')+1:], '=')+strings.LastIndexByte(name, '&')+1]
			if !strings.Contains(p.Detail+p.Title+string(rec.Body.Bytes()), name) {
				t.Errorf("%s: the 400 does not name %s: %s", path, name, rec.Body)
			}
		}
	}
}
