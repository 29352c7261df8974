package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// The audit log over the API (§10.4): httptest's requests come from 192.0.2.1, so their actor
// is api:192.0.2.1.

const testActor = "api:192.0.2.1"

// events lists the audit events of a query of GET /api/v1/eventLogs.
func (b *bundle) events(t testing.TB, query string) []EventLogJSON {
	t.Helper()
	var out eventLogCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/eventLogs?"+query, ""), &out); err != nil {
		t.Fatal(err)
	}
	if out.TotalEntries < len(out.EventLogs) {
		t.Fatalf("total_entries %d < %d events", out.TotalEntries, len(out.EventLogs))
	}
	return out.EventLogs
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return b.String()
}

// TestAuditOfDirectWrites: a trigger's event names its client; pause, unpause and pool changes
// write their events in the transaction of the change, refusals theirs; the filters of
// eventLogs select them.
func TestAuditOfDirectWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	if rec := b.trigger(t, "quick", "q1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	b.pause(t, "quick")
	b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": false}`)
	b.must(t, http.StatusOK, http.MethodPost, "/api/v1/pools", `{"name": "extra", "slots": 3}`)
	b.must(t, http.StatusConflict, http.MethodPost, "/api/v1/pools", `{"name": "extra", "slots": 3}`)
	b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/pools/extra", `{"slots": 4}`)
	b.must(t, http.StatusNoContent, http.MethodDelete, "/api/v1/pools/extra", "")
	b.must(t, http.StatusNotFound, http.MethodPatch, "/api/v1/dags/nosuch", `{"is_paused": true}`)

	all := b.events(t, "actor="+url.QueryEscape(testActor))
	// In commit order: the test's server writes at a fixed time, the daemon at the real one.
	slices.SortFunc(all, func(a, b EventLogJSON) int { return cmp.Compare(a.EventLogID, b.EventLogID) })
	var got []string
	for _, e := range all {
		what := string(e.Event)
		if e.DAGID != nil {
			what += " " + *e.DAGID
		}
		if e.Pool != nil {
			what += " " + *e.Pool
		}
		if e.Outcome != "ok" {
			what += " refused"
		}
		got = append(got, what)
	}
	want := []string{"trigger quick", "pause quick", "unpause quick", "pool_set extra", "pool_set extra refused", "pool_set extra",
		"pool_delete extra", "pause nosuch refused"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events oldest first:\n%s\nwant\n%s", strings.Join(got, "; "), strings.Join(want, "; "))
	}
	if evs := b.events(t, "event=pool_set&owner="+url.QueryEscape(testActor)+"&limit=1&offset=1"); len(evs) != 1 ||
		evs[0].Outcome == "ok" {
		t.Errorf("second newest pool_set: %+v", evs)
	}
	if evs := b.events(t, "before=2000-01-01T00:00:00Z"); len(evs) != 0 {
		t.Errorf("events before 2000: %+v", evs)
	}
	if evs := b.events(t, "after=2026-01-02T03:04:05Z&event=pool_delete"); len(evs) != 1 || string(evs[0].Params) != "null" {
		t.Errorf("pool_delete after the server's now: %+v", evs)
	}
}

// TestUIActionsCarryTheBrowsersAddress: an action the UI sends through Call with its request's
// context is recorded with the browser's address, as the same request to the API would be.
func TestUIActionsCarryTheBrowsersAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.WithValue(context.Background(), clientKey{}, "198.51.100.7:5555")
	if status, body := b.srv.Call(ctx, http.MethodPatch, "/api/v1/dags/quick", map[string]bool{"is_paused": true}, ""); status != http.StatusOK {
		t.Fatalf("pause through Call: %d %s", status, body)
	}
	if status, _ := b.srv.Call(context.Background(), http.MethodPatch, "/api/v1/dags/quick", map[string]bool{"is_paused": false}, ""); status != http.StatusOK {
		t.Fatalf("unpause through Call: %d", status)
	}
	evs := b.events(t, "dag_id=quick")
	if len(evs) != 2 || evs[1].Owner != "api:198.51.100.7" || evs[0].Owner != "api:in-process" {
		t.Fatalf("events %+v", evs)
	}
}
