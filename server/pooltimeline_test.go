package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
)

// TestAggregate: a window's buckets keep every peak (a 2 s spike in a 30 min bucket), say when
// it began and the mean over the bucket; the window's peak and how long the pool was full.
func TestAggregate(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	hs := []store.Holding{
		{Entry: 1, Slots: 1, AdmittedAt: at(-time.Hour)},                                      // held throughout
		{Entry: 2, Slots: 2, AdmittedAt: at(10 * time.Minute), EndedAt: at(20 * time.Minute)}, // 3 held for 10 min
		{Entry: 3, Slots: 1, AdmittedAt: at(61*time.Minute + 7*time.Second), EndedAt: at(61*time.Minute + 9*time.Second)},
		{Entry: 4, Slots: 5, AdmittedAt: at(-2 * time.Hour), EndedAt: at(-time.Hour)}, // ended before the window
		{Entry: 5, Slots: 5, AdmittedAt: at(5 * time.Hour)},                           // after it
	}
	bs, peak, full := aggregate(hs, t0, at(2*time.Hour), 4, 3) // 30 min buckets
	type want struct {
		peak   int
		peakAt time.Duration
		mean   float64
	}
	for i, w := range []want{
		{3, 10 * time.Minute, 1 + 2.0/3}, // 3 for 10 of 30 min
		{1, 30 * time.Minute, 1},
		{2, 61*time.Minute + 7*time.Second, 1 + 2.0/1800},
		{1, 90 * time.Minute, 1},
	} {
		b := bs[i]
		if b.Peak != w.peak || !b.PeakAt.Equal(at(w.peakAt)) || b.Mean != float64(int(w.mean*100+0.5))/100 ||
			!b.Start.Equal(at(time.Duration(i)*30*time.Minute)) {
			t.Errorf("bucket %d: %+v, want peak %d at +%v, mean %.2f", i, b, w.peak, w.peakAt, w.mean)
		}
	}
	if peak != 3 || full != 600 {
		t.Errorf("peak %d, full %v s; want 3 and 600", peak, full)
	}
	// A week of an always-busy pool is its bucket count, whatever the admissions.
	var many []store.Holding
	for i := range 10000 {
		start := at(time.Duration(i) * time.Minute)
		many = append(many, store.Holding{Entry: int64(i), Slots: 1, AdmittedAt: start, EndedAt: start.Add(90 * time.Second)})
	}
	bs, peak, _ = aggregate(many, t0, at(7*24*time.Hour), 336, 4)
	if len(bs) != 336 || peak != 2 || bs[0].Peak != 2 || bs[0].Mean != 1.48 {
		t.Errorf("a week: %d buckets, peak %d, first %+v", len(bs), peak, bs[0])
	}
}

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
