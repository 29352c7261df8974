package ui

import (
	"html/template"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func itoa(n int) string { return strconv.Itoa(n) }

// bar is one span of the Gantt chart.
type bar struct {
	Task, Label string
	State       vocab.TaskState
	Start, End  time.Time
	Waiting     bool // waited for admission: drawn thin
}

// ganttBars lists a run's attempts: the ended ones from the attempts table, the current one from
// its task instance (running, or waiting for admission since its queue entry was created).
func ganttBars(tis []server.TaskInstanceJSON, attempts []store.Attempt, now time.Time) []bar {
	var out []bar
	ended := map[string]map[int]bool{}
	for _, a := range attempts {
		if a.StartDate.IsZero() {
			continue
		}
		if ended[a.TaskID] == nil {
			ended[a.TaskID] = map[int]bool{}
		}
		ended[a.TaskID][a.TryNumber] = true
		end := a.EndDate
		if end.IsZero() {
			end = a.StartDate
		}
		out = append(out, bar{Task: a.TaskID, State: a.State, Start: a.StartDate, End: end,
			Label: a.TaskID + " try " + itoa(a.TryNumber) + ": " + string(a.State) + ", " + fmtDuration(end.Sub(a.StartDate))})
	}
	for _, ti := range tis {
		switch {
		case ti.State == vocab.TaskRunning && ti.StartDate != nil:
			// Its wait for admission is drawn from its queue entry (waitBars).
			out = append(out, bar{Task: ti.TaskID, State: vocab.TaskRunning, Start: *ti.StartDate, End: now,
				Label: ti.TaskID + " try " + itoa(ti.TryNumber) + ": running for " + fmtDuration(now.Sub(*ti.StartDate))})
		case ti.State == vocab.TaskScheduled && ti.QueuedWhen != nil:
			label := ti.TaskID + " waiting " + fmtDuration(now.Sub(*ti.QueuedWhen))
			if ti.WaitReason != nil {
				label += ": " + ti.WaitReason.Text
			}
			out = append(out, bar{Task: ti.TaskID, State: vocab.TaskScheduled, Start: *ti.QueuedWhen, End: now, Waiting: true, Label: label})
		case ti.State == vocab.TaskAwaitingApproval && ti.StartDate != nil && !ended[ti.TaskID][ti.TryNumber]:
			out = append(out, bar{Task: ti.TaskID, State: vocab.TaskAwaitingApproval, Start: *ti.StartDate, End: now,
				Label: ti.TaskID + " awaiting approval for " + fmtDuration(now.Sub(*ti.StartDate))})
		}
	}
	return out
}

// ganttSVG draws one row per task (in DAG order) with the bars of its attempts on a shared time
// axis. hrefs links each row's label to its task instance.
func ganttSVG(tasks []string, hrefs map[string]string, bars []bar) template.HTML {
	if len(bars) == 0 {
		return ""
	}
	t0, t1 := bars[0].Start, bars[0].End
	for _, b := range bars {
		if b.Start.Before(t0) {
			t0 = b.Start
		}
		if b.End.After(t1) {
			t1 = b.End
		}
	}
	total := max(t1.Sub(t0), 10*time.Millisecond)
	const labelW, chartW, rowH, top = 150.0, 850.0, 24.0, 22.0
	w := labelW + chartW + 16
	h := top + float64(len(tasks))*rowH + 6
	x := func(t time.Time) float64 { return labelW + chartW*float64(t.Sub(t0))/float64(total) }
	row := map[string]int{}
	for i, t := range tasks {
		row[t] = i
	}
	var s svg
	s.openGroup(w, h, "gantt", "Gantt chart of the run's attempts") // its task names are links
	tick := func(at time.Time, label, format string) {
		tx := x(at)
		s.raw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(tx), num(top-4), num(tx), num(h))
		if format == "" {
			s.text(tx, 12, "tick", "middle", label)
			return
		}
		// A wall-clock tick carries its instant: the script writes it in the reader's zone.
		s.raw(`<text x="%s" y="12" class="tick" text-anchor="middle" data-time="%s" data-fmt="%s">%s</text>`,
			num(tx), at.UTC().Format(time.RFC3339), format, attr(label))
	}
	if total < 2*time.Second {
		// A run of a second or less: milliseconds since its first bar, not wall-clock seconds.
		step := niceMillis(total, 8)
		for d := step; d <= total; d += step {
			tick(t0.Add(d), "+"+fmtDuration(d), "")
		}
	} else {
		step := niceStep(total, 8)
		for at := t0.Truncate(step).Add(step); !at.After(t1); at = at.Add(step) {
			format := "hm"
			switch {
			case step < time.Minute:
				format = "hms"
			case step >= 24*time.Hour:
				format = "md"
			}
			tick(at, clock(at, step), format)
		}
	}
	for i, t := range tasks {
		y := top + float64(i)*rowH
		if i%2 == 0 {
			s.raw(`<rect class="band" x="0" y="%s" width="%s" height="%s"/>`, num(y), num(w), num(rowH))
		}
		if href := hrefs[t]; href != "" {
			// Out of the tab order: the tasks table below has the same links, one per row.
			s.raw(`<a href="%s" aria-label="%s" tabindex="-1">`, attr(href), attr(t))
			s.text(6, y+16, "label", "start", truncate(t, 20))
			s.raw(`</a>`)
		} else {
			s.text(6, y+16, "label", "start", truncate(t, 20))
		}
	}
	sort.SliceStable(bars, func(i, j int) bool { return bars[i].Waiting && !bars[j].Waiting })
	for _, b := range bars {
		r, ok := row[b.Task]
		if !ok {
			continue
		}
		y := top + float64(r)*rowH
		x1, x2 := x(b.Start), x(b.End)
		bw := max(x2-x1, 2)
		class := "bar " + stateClass(b.State)
		bh, by := rowH-8, y+4
		if b.Waiting {
			class += " waiting"
			bh, by = 6, y+rowH/2-3
		}
		s.raw(`<rect class="%s" x="%s" y="%s" width="%s" height="%s" rx="3">`, attr(class), num(x1), num(by), num(bw), num(bh))
		s.title(b.Label)
		s.raw(`</rect>`)
	}
	return s.html()
}

// niceMillis is the smallest round step of milliseconds that cuts d into at most max parts.
func niceMillis(d time.Duration, max int) time.Duration {
	for _, ms := range []time.Duration{1, 2, 5, 10, 20, 50, 100, 200, 250, 500} {
		if s := ms * time.Millisecond; d/s <= time.Duration(max) {
			return s
		}
	}
	return time.Second
}

// occupancyBar draws a pool's capacity as a bar: one segment per holder, the free rest empty.
func occupancyBar(p server.BoardPoolJSON) template.HTML {
	const w, h = 400.0, 22.0
	var s svg
	s.open(w, h, "occupancy", "occupancy of pool "+p.Name)
	s.raw(`<desc>%s</desc>`, attr(occupancyWords(p)))
	s.raw(`<rect class="free" x="0" y="0" width="%s" height="%s" rx="5"/>`, num(w), num(h))
	capacity := p.Capacity
	if capacity < 0 { // unlimited: scale to what is held, with room to spare
		capacity = max(p.Occupancy*2, 4)
	}
	capacity = max(capacity, p.Occupancy, 1)
	unit := w / float64(capacity)
	x := 0.0
	for i, hd := range p.Holders {
		sw := unit * float64(hd.Slots)
		s.raw(`<rect class="held h%d" x="%s" y="0" width="%s" height="%s">`, i%4, num(x), num(max(sw-1, 1)), num(h))
		s.title(hd.Label + ": " + itoa(hd.Slots) + " " + pluralSlots(hd.Slots))
		s.raw(`</rect>`)
		x += sw
	}
	if p.Capacity > 0 && p.Capacity < 40 {
		for i := 1; i < p.Capacity; i++ {
			s.raw(`<line class="slot" x1="%s" y1="0" x2="%s" y2="%s"/>`, num(unit*float64(i)), num(unit*float64(i)), num(h))
		}
	}
	if p.Capacity >= 0 && p.Occupancy > p.Capacity { // shrunk below what is held (§4.7)
		s.raw(`<rect class="over" x="%s" y="0" width="%s" height="%s"/>`, num(unit*float64(p.Capacity)),
			num(w-unit*float64(p.Capacity)), num(h))
	}
	return s.html()
}

func pluralSlots(n int) string {
	if n == 1 {
		return "slot"
	}
	return "slots"
}

// step is the slots a pool held from At on.
type step struct {
	At   time.Time
	Used int
}

// timeline turns a pool's holdings into a step function over [from, to].
func timeline(hs []store.Holding, from, to time.Time) []step {
	type ev struct {
		at time.Time
		d  int
	}
	var evs []ev
	base := 0
	for _, h := range hs {
		if h.AdmittedAt.After(to) {
			continue
		}
		if h.AdmittedAt.After(from) {
			evs = append(evs, ev{h.AdmittedAt, h.Slots})
		} else {
			base += h.Slots
		}
		if !h.EndedAt.IsZero() && h.EndedAt.Before(to) {
			if h.EndedAt.After(from) {
				evs = append(evs, ev{h.EndedAt, -h.Slots})
			} else {
				base -= h.Slots
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	out := []step{{from, base}}
	used := base
	for _, e := range evs {
		used += e.d
		if last := &out[len(out)-1]; last.At.Equal(e.at) {
			last.Used = used
			continue
		}
		out = append(out, step{e.at, used})
	}
	return out
}

// buckets reduces a step function to the highest use within each of n equal slices of
// [from, to], so a busy hour draws in a bounded number of points and every peak stays visible.
func buckets(steps []step, from, to time.Time, n int) []int {
	out := make([]int, n)
	width := to.Sub(from) / time.Duration(n)
	if width <= 0 {
		width = 1
	}
	for i, st := range steps {
		end := to
		if i+1 < len(steps) {
			end = steps[i+1].At
		}
		first := int(st.At.Sub(from) / width)
		last := int((end.Sub(from) - 1) / width)
		for b := max(first, 0); b <= min(last, n-1); b++ {
			out[b] = max(out[b], st.Used)
		}
	}
	return out
}

// timelineSVG draws slots used over the window as a step chart (the highest use in each slice
// of a few seconds), the capacity as a dashed line, and the stretches when the pool was full
// in red.
func timelineSVG(name string, capacity int, steps []step, from, to time.Time) template.HTML {
	const w, h, left, bottom, top = 560.0, 120.0, 28.0, 18.0, 8.0
	const n = 240 // slices of 15 s over an hour
	used := buckets(steps, from, to, n)
	peak := 1
	for _, u := range used {
		peak = max(peak, u)
	}
	ymax := peak
	if capacity > 0 {
		ymax = max(capacity, peak)
	}
	plotW, plotH := w-left-6, h-bottom-top
	x := func(t time.Time) float64 { return left + plotW*float64(t.Sub(from))/float64(to.Sub(from)) }
	bx := func(b int) float64 { return left + plotW*float64(b)/n }
	y := func(v int) float64 { return top + plotH - plotH*float64(v)/float64(ymax) }
	slice := to.Sub(from) / n
	var s svg
	s.open(w, h, "timeline", "slots used in pool "+name+" over the last hour")
	tick := 10 * time.Minute
	for t := from.Truncate(tick).Add(tick); t.Before(to); t = t.Add(tick) {
		tx := x(t)
		s.raw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(tx), num(top), num(tx), num(top+plotH))
		if tx < w-6-48 { // a label this close to "now" would overprint it
			s.text(tx, h-4, "tick", "middle", clock(t, tick))
		}
	}
	s.text(w-6, h-4, "tick", "end", "now")
	s.raw(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(top+plotH), num(w-6), num(top+plotH))
	s.text(left-5, y(0)+4, "tick", "end", "0")
	s.text(left-5, y(ymax)+8, "tick", "end", itoa(ymax))
	// Full stretches, merged, under the curve.
	if capacity > 0 {
		for b := 0; b < n; {
			if used[b] < capacity {
				b++
				continue
			}
			e := b
			for e < n && used[e] >= capacity {
				e++
			}
			s.raw(`<rect class="full" x="%s" y="%s" width="%s" height="%s">`, num(bx(b)), num(top), num(max(bx(e)-bx(b), 1)), num(plotH))
			s.title("full from " + clock(from.Add(time.Duration(b)*slice), time.Second) + " to " +
				clock(from.Add(time.Duration(e)*slice), time.Second))
			s.raw(`</rect>`)
			b = e
		}
	}
	var line strings.Builder
	line.WriteString("M" + num(bx(0)) + "," + num(y(used[0])))
	for b := 1; b < n; b++ {
		if used[b] != used[b-1] {
			line.WriteString(" H" + num(bx(b)) + " V" + num(y(used[b])))
		}
	}
	line.WriteString(" H" + num(bx(n)))
	area := line.String() + " V" + num(y(0)) + " H" + num(bx(0)) + " Z"
	s.raw(`<path class="area" d="%s"/>`, area)
	s.raw(`<path class="line" d="%s"/>`, line.String())
	if capacity > 0 {
		s.raw(`<line class="cap" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(y(capacity)), num(w-6), num(y(capacity)))
	}
	return s.html()
}

func occupancyWords(p server.BoardPoolJSON) string {
	if p.Capacity < 0 {
		return itoa(p.Occupancy) + " slots held, unlimited"
	}
	return itoa(p.Occupancy) + " of " + itoa(p.Capacity) + " slots held"
}
