package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestPoolCRUD creates, changes and deletes a stored pool; file pools stay read-only and a pool a
// DAG needs is refused unless forced.
func TestPoolCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	steps := []struct {
		name, method, path, body string
		want                     int
		golden                   string // "" = no golden file
		detail                   string // for errors: a part of the problem's detail
	}{
		{"create", http.MethodPost, "/api/v1/pools",
			`{"name": "api", "slots": 3, "description": "made over HTTP", "max_queued": 5}`, http.StatusOK, "pool_created", ""},
		{"create again", http.MethodPost, "/api/v1/pools", `{"name": "api", "slots": 3}`, http.StatusConflict, "", "already exists"},
		{"create file pool", http.MethodPost, "/api/v1/pools", `{"name": "db", "slots": 3}`, http.StatusConflict, "", "already exists"},
		{"patch", http.MethodPatch, "/api/v1/pools/api",
			`{"slots": 5, "ordering": "strict", "include_deferred": true, "on_resize": "drain"}`, http.StatusOK, "pool_patched", ""},
		{"patch starvation", http.MethodPatch, "/api/v1/pools/api", `{"ordering": "backfill", "starvation_after": 90}`,
			http.StatusOK, "pool_patched_starvation", ""},
		{"patch file pool", http.MethodPatch, "/api/v1/pools/db", `{"slots": 3}`, http.StatusConflict, "", "poolflow.yaml"},
		{"delete file pool", http.MethodDelete, "/api/v1/pools/db", ``, http.StatusConflict, "", "poolflow.yaml"},
		{"get", http.MethodGet, "/api/v1/pools/api", ``, http.StatusOK, "pool_get", ""},
		{"delete", http.MethodDelete, "/api/v1/pools/api", ``, http.StatusNoContent, "", ""},
		{"gone", http.MethodGet, "/api/v1/pools/api", ``, http.StatusNotFound, "", "not found"},
	}
	for _, st := range steps {
		rec := b.do(t, st.method, st.path, st.body, testToken)
		if rec.Code != st.want {
			t.Fatalf("%s: status %d, want %d: %s", st.name, rec.Code, st.want, rec.Body)
		}
		if st.golden != "" {
			b.golden(t, st.golden, rec.Body.Bytes())
		}
		if st.detail != "" {
			if p := problemOf(t, rec); !strings.Contains(p.Detail, st.detail) {
				t.Errorf("%s: detail %q lacks %q", st.name, p.Detail, st.detail)
			}
		}
	}
}

// TestPoolInUse: deleting or shrinking a stored pool that a loaded DAG needs is 409 unless forced.
func TestPoolInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.must(t, http.StatusOK, http.MethodPost, "/api/v1/pools", `{"name": "side", "slots": 2}`)
	// A DAG that needs two slots of side, loaded now that the pool exists.
	b.writeDAG(t, "side.yaml", "tasks:\n  - id: t\n    command: [\"true\"]\n    pool_requirements: {side: 2}\n")
	b.waitDAG(t, "side")
	rec := b.do(t, http.MethodPatch, "/api/v1/pools/side", `{"slots": 1}`, testToken)
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "side.t") {
		t.Fatalf("shrink: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodDelete, "/api/v1/pools/side", ``, testToken)
	if rec.Code != http.StatusConflict {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/pools/side?force=true", `{"slots": 1}`)
	b.must(t, http.StatusNoContent, http.MethodDelete, "/api/v1/pools/side?force=true", ``)
}

// TestCancel cancels a waiting entry through the seed route: 200 with the cancelled entry, then
// 409 because it no longer waits; the cancel is a failed attempt of the task.
func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "held")
	if rec := b.trigger(t, "held", "r1", ""); rec.Code != http.StatusAccepted {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	rec := b.do(t, http.MethodPost, "/pools/db/queue/1/cancel", "", testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "cancel", rec.Body.Bytes())
	rec = b.do(t, http.MethodPost, "/pools/db/queue/1/cancel", "", testToken)
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "not waiting") {
		t.Fatalf("second cancel: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, "/api/v1/dags/held/dagRuns/r1/taskInstances/load", "", "")
	b.golden(t, "task_instance_cancelled", rec.Body.Bytes())
	rec = b.do(t, http.MethodGet, "/pools", "", "")
	b.golden(t, "pool_board_after_cancel", rec.Body.Bytes())
}

// TestApproval approves one gate and rejects another; deciding twice is 409.
func TestApproval(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	for _, id := range []string{"g1", "g2"} {
		if rec := b.trigger(t, "gate", id, ""); rec.Code != http.StatusOK {
			t.Fatalf("start %s: %d %s", id, rec.Code, rec.Body)
		}
	}
	const ti = "/api/v1/dags/gate/dagRuns/%s/taskInstances/approve/"
	rec := b.do(t, http.MethodPost, strings.Replace(ti, "%s", "g1", 1)+"approve", `{"note": "looks good"}`, testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "approved", rec.Body.Bytes())
	rec = b.do(t, http.MethodPost, strings.Replace(ti, "%s", "g2", 1)+"reject", ``, testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("reject: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "rejected", rec.Body.Bytes())
	rec = b.do(t, http.MethodPost, strings.Replace(ti, "%s", "g2", 1)+"approve", `{}`, testToken)
	if rec.Code != http.StatusConflict {
		t.Fatalf("second decision: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodPost, "/api/v1/dags/gate/dagRuns/g1/taskInstances/publish/approve", `{}`, testToken)
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "not an approval gate") {
		t.Fatalf("approve a command task: %d %s", rec.Code, rec.Body)
	}
}

// TestBoardOrder: GET /pools lists a pool's waiting entries in admission order (priority first,
// then due time, then queue ID), not in queue-ID order.
func TestBoardOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.pause(t, "held")
	b.pause(t, "urgent")
	for _, start := range []struct{ dag, run string }{{"held", "h1"}, {"urgent", "u1"}, {"held", "h2"}} {
		if rec := b.trigger(t, start.dag, start.run, ""); rec.Code != http.StatusAccepted {
			t.Fatalf("start %s: %d %s", start.run, rec.Code, rec.Body)
		}
	}
	var board BoardJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/pools", ""), &board); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range board.Pools {
		if p.Name == "db" {
			for _, e := range p.Waiting {
				got = append(got, fmt.Sprintf("%s/%d", e.DAGRunID, e.Priority))
			}
		}
	}
	if want := []string{"u1/10", "h1/2", "h2/2"}; !slices.Equal(got, want) {
		t.Fatalf("waiting order %v, want %v", got, want)
	}
}

// TestCancelWithNoDaemonAlive: a cancel on a dead owner's entry answers 409 naming the owner
// when no daemon is alive to apply it, instead of queueing it for nobody.
func TestCancelWithNoDaemonAlive(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true, noStop: true})
	b.pause(t, "held")
	if rec := b.trigger(t, "held", "r1", ""); rec.Code != http.StatusAccepted {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	if err := b.daemon.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := b.st.GetRun(ctx, "held", "r1")
	if err != nil {
		t.Fatal(err)
	}
	gone := time.Now().Add(-time.Hour)
	err = b.st.WithTx(ctx, func(tx store.Tx) error {
		run.Owner = "ghost"
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		return tx.PutOwner(&store.Owner{ID: "ghost", Kind: vocab.OwnerDaemon, Host: "elsewhere", PID: 4242,
			StartedAt: gone, Heartbeat: gone, LeaseUntil: gone.Add(30 * time.Second)})
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := b.do(t, http.MethodPost, "/pools/db/queue/1/cancel", "", testToken)
	if detail := problemOf(t, rec).Detail; rec.Code != http.StatusConflict ||
		!strings.Contains(detail, "no daemon is alive") || !strings.Contains(detail, "ghost (pid 4242 on host elsewhere)") {
		t.Fatalf("cancel with nobody alive: %d %s", rec.Code, rec.Body)
	}
}
