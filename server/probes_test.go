package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// probe sends GET path and decodes the probe's answer.
func (b *bundle) probe(t *testing.T, path string) (int, probeJSON) {
	t.Helper()
	rec := b.do(t, http.MethodGet, path, "", "")
	var out probeJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Code, out
}

func failedCheck(p probeJSON, name string) string {
	for _, c := range p.Checks {
		if c.Name == name && c.Status != "ok" {
			return c.Detail
		}
	}
	return ""
}

// TestReadyzDuringAStoreOutage: /livez and /readyz answer 200 while all is well. During a store
// outage (a newer binary's schema version row appears: every operation of the daemon's handle
// is refused) /readyz answers 503 naming the store, while /livez stays 200 (a restart would not
// bring the store back) and /api/v1/health stays 200 as Airflow's does; once the row is gone,
// /readyz is 200 again without a restart.
func TestReadyzDuringAStoreOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, path := range []string{"/livez", "/readyz"} {
		if code, p := b.probe(t, path); code != http.StatusOK || p.Status != "ok" {
			t.Fatalf("%s before the outage: %d %+v", path, code, p)
		}
	}
	future := strconv.Itoa(store.SchemaVersion() + 1)
	storetest.Exec(t, b.st, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (`+future+`, 'future', 0)`)
	// The handle sees the newer schema at the next transaction it begins after another
	// connection's commit (the daemon's pass, or this one): from then on it refuses all.
	if err := b.st.WithTx(context.Background(), func(store.Tx) error { return nil }); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("the store's handle after a newer schema: %v", err)
	}
	code, during := b.probe(t, "/readyz")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz during the outage: %d %+v", code, during)
	}
	if d := failedCheck(during, "store"); !strings.Contains(d, "pool state is unavailable") {
		t.Errorf("/readyz during the outage: %+v", during)
	}
	if code, p := b.probe(t, "/livez"); code != http.StatusOK {
		t.Errorf("/livez during the outage: %d %+v", code, p)
	}
	if rec := b.do(t, http.MethodGet, "/api/v1/health", "", ""); rec.Code != http.StatusOK ||
		!strings.Contains(rec.Body.String(), `"unhealthy"`) {
		t.Errorf("health during the outage: %d %s", rec.Code, rec.Body)
	}
	// No pass commits during the outage. The first pass that begins after it ends and commits
	// has found the row gone (the handle reads the version again at most every half second).
	ended := time.Now()
	storetest.Exec(t, b.st, `DELETE FROM schema_migrations WHERE version = `+future)
	timeout := time.After(20 * time.Second)
	for n := (executor.Notice{}); n.Kind != executor.NoticePass || n.At.Before(ended); {
		select {
		case n = <-b.notices:
		case <-timeout:
			t.Fatal("no pass committed after the outage")
		}
	}
	if code, p := b.probe(t, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the outage: %d %+v", code, p)
	}
}

// TestProbesOfAStoppedDaemon: a daemon whose loop has ended is neither live nor ready.
func TestProbesOfAStoppedDaemon(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noStop: true})
	if err := b.daemon.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		code, p := b.probe(t, path)
		if code != http.StatusServiceUnavailable || !strings.Contains(failedCheck(p, "scheduler"), "stopped") {
			t.Errorf("%s of a stopped daemon: %d %+v", path, code, p)
		}
	}
	// Its owner row was released at the clean stop: the lease is not held either.
	if _, p := b.probe(t, "/readyz"); failedCheck(p, "lease") == "" {
		t.Errorf("/readyz of a stopped daemon holds a lease: %+v", p)
	}
}

// TestLoopCheck: a loop that has not come round for longer than loopStall is wedged.
func TestLoopCheck(t *testing.T) {
	t.Parallel()
	now := time.Now()
	if c := loopCheck(now.Add(-time.Second), now); c.Status != "ok" {
		t.Errorf("a loop that turned a second ago: %+v", c)
	}
	if c := loopCheck(now.Add(-loopStall-time.Second), now); c.Status == "ok" || !strings.Contains(c.Detail, "wedged") {
		t.Errorf("a loop stuck past loopStall: %+v", c)
	}
	if c := loopCheck(time.Time{}, now); c.Status == "ok" {
		t.Errorf("a loop that never turned: %+v", c)
	}
}

// TestProbesWhileStarting: while serve waits for the store, it is live but not ready.
func TestProbesWhileStarting(t *testing.T) {
	t.Parallel()
	h := Starting(func() string { return "database is locked" })
	for path, want := range map[string]int{"/livez": http.StatusOK, "/readyz": http.StatusServiceUnavailable} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want || !strings.Contains(rec.Body.String(), "starting: database is locked") {
			t.Errorf("%s while starting: %d %s", path, rec.Code, rec.Body)
		}
	}
}
