package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
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

// TestPoolTimelineCapacity: a pool created with 2 slots and resized to 8 an hour later has a
// capacity step in its timeline, the holders at an instant are counted against the capacity
// then, and a slice whose peak reached the old capacity is full.
func TestPoolTimelineCapacity(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	put := func(at time.Time, slots int) {
		if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
			return tx.PutPool(&store.Pool{Name: "grown", Slots: slots, TargetSlots: store.NoTarget, Ordering: vocab.Backfill,
				OnResize: vocab.ResizeImmediate, Source: "store"}, at)
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(t0, 2)
	put(t0.Add(time.Hour), 8)
	// Two slots held from 10 to 20 minutes: the pool was full then.
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		r := &store.Run{DAGID: "held", RunID: "cap", RunType: vocab.RunManual, LogicalDate: t0, State: vocab.RunSuccess, QueuedAt: t0}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		e := &store.Entry{Run: r.PK, TaskID: "t", TryNumber: 1, Label: "held.t", Priority: 1, Due: t0, State: vocab.EntryWaiting,
			CreatedAt: t0, Needs: []store.Requirement{{Pool: "grown", Slots: 2}}}
		if err := tx.InsertEntry(e); err != nil {
			return err
		}
		if err := tx.Admit(e, "test", 1, t0.Add(10*time.Minute), t0.Add(time.Hour)); err != nil {
			return err
		}
		_, err := tx.ReleaseHeld(e.ID, "test", 1, t0.Add(20*time.Minute))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var tl PoolTimelineJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/grown/timeline?window=day&end="+
		t0.Add(2*time.Hour).Format(time.RFC3339), ""), &tl); err != nil {
		t.Fatal(err)
	}
	steps := func(cs []CapacityStep) string {
		var out []string
		for _, c := range cs {
			v := "none"
			if c.Slots != nil {
				v = strconv.Itoa(*c.Slots)
			}
			out = append(out, c.At.Sub(t0).String()+":"+v)
		}
		return strings.Join(out, " ")
	}
	if got := steps(tl.Capacity); got != "-22h0m0s:none 0s:2 1h0m0s:8" || tl.Slots != 8 {
		t.Errorf("capacity %s (now %d); want none, 2 from t0, 8 an hour later", got, tl.Slots)
	}
	if tl.Peak != 2 || tl.FullSeconds != 600 {
		t.Errorf("peak %d, full %v s; want 2 slots, full for 10 min (of 2, not of 8)", tl.Peak, tl.FullSeconds)
	}
	for at, want := range map[time.Duration]int{15 * time.Minute: 2, 90 * time.Minute: 8, -time.Minute: 0} {
		var hs PoolHoldersJSON
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/grown/holders?at="+
			t0.Add(at).Format(time.RFC3339), ""), &hs); err != nil {
			t.Fatal(err)
		}
		if hs.Slots != want {
			t.Errorf("holders at t0%+v: capacity %d, want %d", at, hs.Slots, want)
		}
	}
}
