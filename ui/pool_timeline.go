package ui

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
)

// A pool's timeline page (/ui/pools/{pool}/timeline): slots used over an hour, a day or a week
// (server.PoolTimeline aggregates the claim history into a few hundred buckets, so a week is
// as light as an hour), earlier and later windows, and who held the slots at an instant — a
// click on the chart (each bucket links to the moment its peak began) or a time typed in the
// form, answered by server.PoolHoldersAt.

func init() { funcs["timelinePath"] = timelinePath }

// timelinePath is the timeline page of pool.
func timelinePath(pool string) string { return "/ui/pools/" + url.PathEscape(pool) + "/timeline" }

type timelineData struct {
	Pool     string
	Timeline server.PoolTimelineJSON
	Chart    template.HTML
	Windows  []windowLink
	Earlier  string // the window before this one
	Later    string // the window after it; "" when this one ends now
	Now      string // the window ending now; "" when this is it
	At       time.Time
	Holders  *server.PoolHoldersJSON // nil when no instant was asked
	AtText   string                  // the form's value
	AtError  string
	FullFor  time.Duration
	MeanUsed float64
	HasCap   bool // the pool had a finite capacity at some time in the window
	CapMoved bool // its capacity changed within the window
}

type windowLink struct {
	Name, Href string
	On         bool
}

func (u *UI) poolTimelinePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pool := mux.Vars(r)["pool"]
	q := r.URL.Query()
	win, ok := server.TimelineWindowNamed(q.Get("window"))
	if !ok {
		u.errorPage(w, r, http.StatusBadRequest, "window: want hour, day or week, got "+q.Get("window")+".")
		return
	}
	var end time.Time
	if v := q.Get("end"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
		if err != nil {
			u.errorPage(w, r, http.StatusBadRequest, "end: want an RFC 3339 time such as 2026-12-02T15:04:05Z, got "+v+".")
			return
		}
		end = t
	}
	now := u.api.Now()
	if !end.Before(now) {
		end = time.Time{} // the window ending now follows it
	}
	tl, err := u.api.PoolTimeline(ctx, pool, win, end)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data := timelineData{Pool: pool, Timeline: tl, FullFor: time.Duration(tl.FullSeconds * float64(time.Second)),
		CapMoved: capacityChanged(tl)}
	for _, c := range tl.Capacity {
		data.HasCap = data.HasCap || capacityOf(c) > 0
	}
	base := timelinePath(pool)
	link := func(window string, end time.Time, at time.Time) string {
		v := url.Values{}
		if window != "hour" {
			v.Set("window", window)
		}
		if !end.IsZero() {
			v.Set("end", end.UTC().Format(time.RFC3339))
		}
		if !at.IsZero() {
			v.Set("at", at.UTC().Format(time.RFC3339Nano))
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
	for _, x := range server.TimelineWindows {
		// Another window keeps this one's end, so a moment looked at stays in view.
		data.Windows = append(data.Windows, windowLink{Name: x.Name, Href: link(x.Name, end, time.Time{}), On: x.Name == win.Name})
	}
	data.Earlier = link(win.Name, tl.From, time.Time{})
	if !end.IsZero() {
		if later := tl.To.Add(win.Span); later.Before(now) {
			data.Later = link(win.Name, later, time.Time{})
		} else {
			data.Later = link(win.Name, time.Time{}, time.Time{})
		}
		data.Now = link(win.Name, time.Time{}, time.Time{})
	}
	total := 0.0
	for _, b := range tl.Buckets {
		total += b.Mean
	}
	if len(tl.Buckets) > 0 {
		data.MeanUsed = float64(int(total/float64(len(tl.Buckets))*100+0.5)) / 100
	}
	if v := q.Get("at"); v != "" {
		data.AtText = v
		at, err := parseInstant(v)
		if err != nil {
			data.AtError = err.Error()
		} else {
			hs, err := u.api.PoolHoldersAt(ctx, pool, at)
			if err != nil {
				u.fail(w, r, err)
				return
			}
			data.At, data.Holders = hs.At, &hs
		}
	}
	data.Chart = windowChart(tl, data.At, func(at time.Time) string { return link(win.Name, end, at) + "#holders" })
	u.render(w, r, http.StatusOK, "pooltimeline", pool+" · timeline", "pools", data)
}

// parseInstant reads the instant the form asks about: an RFC 3339 time, or a date and time
// without a zone (2026-12-02T13:05, 2026-12-02 13:05:30), taken as UTC.
func parseInstant(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	// A '+' of an offset that the client did not escape arrives as a space.
	for _, c := range []string{v, strings.ReplaceAll(v, " ", "+")} {
		if t, err := time.Parse(time.RFC3339Nano, c); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errInstant(v)
}

type errInstant string

func (e errInstant) Error() string {
	return "at: want a time such as 2026-12-02T13:05:00Z (or 2026-12-02 13:05, read as UTC), got " + string(e)
}

// windowChart draws a timeline: the peak of each bucket as a step line, the mean as the area
// under it, the capacity dashed, the buckets when the pool was full in red, the instant asked
// about as a marker. Each bucket is a link to the moment its peak began (href), for the
// holders then; the ticks carry their instant (data-time) so the script writes them in the
// reader's zone.
func windowChart(tl server.PoolTimelineJSON, at time.Time, href func(time.Time) string) template.HTML {
	const w, h, left, right, bottom, top = 960.0, 220.0, 34.0, 8.0, 22.0, 10.0
	n := len(tl.Buckets)
	if n == 0 {
		return ""
	}
	ymax := max(tl.Peak, 1)
	for _, c := range tl.Capacity {
		if c.Slots != nil {
			ymax = max(ymax, *c.Slots)
		}
	}
	plotW, plotH := w-left-right, h-bottom-top
	span := tl.To.Sub(tl.From)
	x := func(t time.Time) float64 { return left + plotW*float64(t.Sub(tl.From))/float64(span) }
	bx := func(b int) float64 { return left + plotW*float64(b)/float64(n) }
	y := func(v float64) float64 { return top + plotH - plotH*v/float64(ymax) }
	var s svg
	s.openGroup(w, h, "timeline window-chart", "slots used in pool "+tl.Pool+" over the "+tl.Window+
		" to "+tl.To.Format("2006-01-02 15:04 UTC")+": the peak of each slice of "+fmtDuration(time.Duration(tl.BucketSeconds*float64(time.Second)))+
		"; each slice links to who held the slots at its peak")
	tick, fmtTick := 10*time.Minute, "hm"
	switch tl.Window {
	case "day":
		tick = 3 * time.Hour
	case "week":
		tick, fmtTick = 24*time.Hour, "md"
	}
	for t := tl.From.Truncate(tick).Add(tick); t.Before(tl.To); t = t.Add(tick) {
		tx := x(t)
		s.raw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(tx), num(top), num(tx), num(top+plotH))
		if tx < w-right-40 {
			label := clock(t, tick)
			if fmtTick == "hm" && t.Hour() == 0 && t.Minute() == 0 {
				label = t.Format("Jan 2")
			}
			s.raw(`<text x="%s" y="%s" class="tick" text-anchor="middle" data-time="%s" data-fmt="%s">%s</text>`,
				num(tx), num(h-5), t.UTC().Format(time.RFC3339), fmtTick, attr(label))
		}
	}
	s.raw(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(top+plotH), num(w-right), num(top+plotH))
	s.text(left-5, y(0)+4, "tick", "end", "0")
	s.text(left-5, y(float64(ymax))+8, "tick", "end", itoa(ymax))
	// A slice is full when its peak reached the capacity of that moment.
	full := func(b int) bool {
		c := capacityAt(tl.Capacity, tl.Buckets[b].PeakAt)
		return c > 0 && tl.Buckets[b].Peak >= c
	}
	{
		for b := 0; b < n; {
			if !full(b) {
				b++
				continue
			}
			e := b
			for e < n && full(e) {
				e++
			}
			s.raw(`<rect class="full" x="%s" y="%s" width="%s" height="%s"/>`, num(bx(b)), num(top), num(max(bx(e)-bx(b), 1)), num(plotH))
			b = e
		}
	}
	var area, line strings.Builder
	area.WriteString("M" + num(bx(0)) + "," + num(y(0)))
	line.WriteString("M" + num(bx(0)) + "," + num(y(float64(tl.Buckets[0].Peak))))
	for b, bk := range tl.Buckets {
		area.WriteString(" L" + num(bx(b)) + "," + num(y(bk.Mean)) + " L" + num(bx(b+1)) + "," + num(y(bk.Mean)))
		if b > 0 && bk.Peak != tl.Buckets[b-1].Peak {
			line.WriteString(" H" + num(bx(b)) + " V" + num(y(float64(bk.Peak))))
		}
	}
	area.WriteString(" L" + num(bx(n)) + "," + num(y(0)) + " Z")
	line.WriteString(" H" + num(bx(n)))
	s.raw(`<path class="area" d="%s"/>`, area.String())
	s.raw(`<path class="line" d="%s"/>`, line.String())
	if d := capacityPath(tl, x, y); d != "" {
		s.raw(`<path class="cap" d="%s"/>`, d)
	}
	if !at.IsZero() && !at.Before(tl.From) && !at.After(tl.To) {
		s.raw(`<line class="at" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(x(at)), num(top-4), num(x(at)), num(top+plotH))
	}
	// The slices as links, over everything; out of the tab order (the form below takes any
	// instant from the keyboard), named by their titles.
	width := tl.To.Sub(tl.From) / time.Duration(n)
	for b, bk := range tl.Buckets {
		end := bk.Start.Add(width)
		s.raw(`<a class="hit" href="%s" tabindex="-1" data-at="%s" data-peak="%d"><rect x="%s" y="%s" width="%s" height="%s"/>`,
			attr(href(bk.PeakAt)), bk.PeakAt.UTC().Format(time.RFC3339Nano), bk.Peak, num(bx(b)), num(top), num(bx(b+1)-bx(b)), num(plotH))
		s.title(clock(bk.Start, time.Second) + "–" + clock(end, time.Second) + " UTC: peak " + itoa(bk.Peak) + " " +
			pluralSlots(bk.Peak) + ", " + trimFloat(bk.Mean) + " on average; click for who held them")
		s.raw(`</a>`)
	}
	return s.html()
}

// capacityOf is the capacity a step gives (0: no pool; -1 unlimited).
func capacityOf(c server.CapacityStep) int {
	if c.Slots == nil {
		return 0
	}
	return *c.Slots
}

// capacityAt is the capacity of the timeline's steps at instant t.
func capacityAt(steps []server.CapacityStep, t time.Time) int {
	c := 0
	for _, s := range steps {
		if s.At.After(t) {
			break
		}
		c = capacityOf(s)
	}
	return c
}

// capacityPath draws the capacity as it was over the window: a step line, absent where the
// pool was unlimited or did not exist.
func capacityPath(tl server.PoolTimelineJSON, x func(time.Time) float64, y func(float64) float64) string {
	var d strings.Builder
	prev := 0
	for i, c := range tl.Capacity {
		end := tl.To
		if i+1 < len(tl.Capacity) {
			end = tl.Capacity[i+1].At
		}
		start := c.At
		if start.Before(tl.From) {
			start = tl.From
		}
		v := capacityOf(c)
		if v <= 0 || !end.After(start) {
			prev = 0
			continue
		}
		if prev > 0 {
			d.WriteString(" V" + num(y(float64(v))))
		} else {
			d.WriteString(" M" + num(x(start)) + "," + num(y(float64(v))))
		}
		d.WriteString(" H" + num(x(end)))
		prev = v
	}
	return strings.TrimSpace(d.String())
}

// capacityChanged says whether the capacity changed within the window.
func capacityChanged(tl server.PoolTimelineJSON) bool {
	for _, c := range tl.Capacity[1:] {
		if capacityOf(c) != capacityOf(tl.Capacity[0]) {
			return true
		}
	}
	return false
}

// trimFloat is f with at most two decimals and no trailing zeros.
func trimFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
