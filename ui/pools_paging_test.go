package ui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPoolsPaging: a pool's waiting list is shown 50 at a time in admission order, filtered by
// DAG and reason; each cancel form is its entry's own and says what a cancel does.
func TestPoolsPaging(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	queue(t, b, "held", 120)
	body := b.page(t, http.StatusOK, "/ui/pools")
	if n := strings.Count(body, `<tr data-queue-id=`); n != 50+0 {
		t.Errorf("first page: %d waiting rows, want 50", n)
	}
	if !strings.Contains(body, "120 waiting") || !strings.Contains(body, `id="waiting-next-db"`) {
		t.Errorf("no count of 120 or no next page")
	}
	if !strings.Contains(body, `id="cancel-`) || !strings.Contains(body, "the retry policy applies: if retries remain, try 2 will queue") {
		t.Errorf("the cancel forms do not say what they do")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?pool=db&offset=100")
	if n := strings.Count(body, `<tr data-queue-id=`); n != 20 {
		t.Errorf("last page: %d rows, want 20", n)
	}
	if !strings.Contains(body, `<td class="muted">101</td>`) || !strings.Contains(body, `id="waiting-prev-db"`) {
		t.Errorf("the last page does not start at position 101")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?dag=nope")
	if strings.Contains(body, `<tr data-queue-id=`) || !strings.Contains(body, "No waiting entry matches the filter") {
		t.Errorf("the DAG filter keeps entries of other DAGs")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?dag=HELD&reason=no_such_code")
	if strings.Contains(body, `<tr data-queue-id=`) {
		t.Errorf("the reason filter keeps entries with other reasons")
	}
}

// TestBrowserPoolsPaging: the pools page pages through a long waiting list.
func TestBrowserPoolsPaging(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	queue(t, b, "held", 120)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the waiting list", `document.querySelectorAll("#pool-db tr[data-queue-id]").length === 50`)
	for _, pos := range []string{"51", "101"} {
		do(t, ctx, chromedp.Click(chromedp.CSS(`#waiting-next-db`)))
		waitFor(t, ctx, "position "+pos, `(document.querySelector("#pool-db tr[data-queue-id] td") || {}).textContent === "`+pos+`"`)
	}
	shot(t, ctx, "pools-paged")
}
