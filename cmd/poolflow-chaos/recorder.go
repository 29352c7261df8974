package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// attemptKey names one try of one task instance, as the POOLFLOW_ variables of its process say.
type attemptKey struct {
	dag, run, task string
	try            int
}

func (k attemptKey) String() string { return fmt.Sprintf("%s/%s/%s#%d", k.dag, k.run, k.task, k.try) }

// proc is one recorded process of an attempt: the leader (its start line) or its sleeping child.
// Its life is known as two bounds, in CLOCK_REALTIME nanoseconds: alive, the latest instant it
// was certainly running, and gone, an instant by which it had certainly exited (0 while it
// lives). The real exit lies in (alive, gone].
type proc struct {
	key       attemptKey
	pid, ppid int
	leader    bool
	line      int64 // the time in its own line: it was running then
	alive     int64
	gone      int64
}

// attempt is one process of an attempt (a replay of the same try is another attempt) and its
// children.
type attempt struct {
	key      attemptKey
	leader   *proc
	children []*proc
	needs    map[string]int
	mode     string
	daemon   string // the owner that ran it (POOLFLOW_DAEMON_ID: a daemon, or a dags test process)
	end      int64  // the leader's end line, 0 if it wrote none (killed)
	status   int
}

// span is an attempt's interval: [start, sure] is certainly covered by a live process of the
// attempt; [start, maybe] may be. A violation is counted on sure spans only; maybe spans say
// what the recorder cannot rule out.
func (a *attempt) span() (start, sure, maybe int64) {
	start, sure, maybe = a.leader.line, a.leader.alive, a.leader.gone
	if a.end > sure {
		sure = a.end
	}
	for _, c := range a.children {
		sure = max(sure, c.alive)
		maybe = max(maybe, c.gone)
	}
	return start, sure, max(maybe, sure)
}

// window is how wide (alive, gone] was for one process; watched tells whether it exited while
// its pidfd was watched or was already gone when its line was read.
type window struct {
	ns      int64
	watched bool
}

// recorder tails the record file the tasks append to and watches every recorded process
// through a pidfd (pidwatch.go).
type recorder struct {
	path string

	mu       sync.Mutex
	attempts []*attempt
	leaders  map[string]*attempt
	strays   []*proc // child lines whose leader was not seen
	bad      []string
	watching []*watched
	pending  []*proc
	windows  []window // the recorder's uncertainty on every exited process

	stop, done chan struct{}
	started    bool
	once       sync.Once
}

func newRecorder(path string) *recorder {
	return &recorder{path: path, leaders: map[string]*attempt{}, stop: make(chan struct{}), done: make(chan struct{})}
}

func leaderID(k attemptKey, pid int) string { return k.String() + "@" + strconv.Itoa(pid) }

// start tails the file and watches processes until close.
func (r *recorder) start() error {
	f, err := os.Open(r.path)
	if err != nil {
		return err
	}
	r.started = true
	tailDone := make(chan struct{})
	go func() { defer close(tailDone); r.tail(f) }()
	go func() { r.watch(tailDone); f.Close(); close(r.done) }()
	return nil
}

// closeOnce reads what is left of the file, takes a last look at every watched process and
// stops. Processes still alive keep gone = 0.
func (r *recorder) closeOnce() {
	r.once.Do(func() {
		close(r.stop)
		if r.started {
			<-r.done
		}
	})
}

// count is the number of attempts recorded so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts)
}

// tail reads new lines as the tasks append them. A poll of a few ms is the tail's whole
// latency; it matters only for how soon a pidfd is opened, never for a recorded time.
func (r *recorder) tail(f *os.File) {
	rd := bufio.NewReader(f)
	var partial []byte
	for {
		line, err := rd.ReadBytes('\n')
		partial = append(partial, line...)
		if err == nil {
			r.parse(string(bytes.TrimSuffix(partial, []byte("\n"))))
			partial = partial[:0]
			continue
		}
		if err != io.EOF {
			r.mu.Lock()
			r.bad = append(r.bad, "read: "+err.Error())
			r.mu.Unlock()
			return
		}
		select {
		case <-r.stop:
			if len(partial) > 0 {
				r.parse(string(partial))
			}
			return
		case <-time.After(3 * time.Millisecond):
		}
	}
}

// parseRealtime reads bash's EPOCHREALTIME (seconds with six decimals, the decimal point of the
// locale) as nanoseconds.
func parseRealtime(s string) (int64, error) {
	s = strings.Replace(s, ",", ".", 1)
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) == 0 || len(frac) > 9 {
		return 0, fmt.Errorf("time %q", s)
	}
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	b, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	if err != nil {
		return 0, err
	}
	return a*1e9 + b, nil
}

func parseNeeds(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || k == "" {
			return nil, fmt.Errorf("requirement %q", kv)
		}
		out[k] = n
	}
	return out, nil
}

// parse handles one line: start|child|end, time, pid, ppid, dag, run, task, try, then
// requirements and mode (start) or the exit status (end).
func (r *recorder) parse(line string) {
	f := strings.Split(line, "\t")
	fail := func(why string) {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("%s: %q", why, line))
		r.mu.Unlock()
	}
	want := map[string]int{"start": 11, "child": 8, "end": 9}
	if n, ok := want[f[0]]; !ok || len(f) != n {
		fail("malformed line")
		return
	}
	at, err := parseRealtime(f[1])
	pid, err2 := strconv.Atoi(f[2])
	ppid, err3 := strconv.Atoi(f[3])
	try, err4 := strconv.Atoi(f[7])
	if err != nil || err2 != nil || err3 != nil || err4 != nil {
		fail("bad number")
		return
	}
	key := attemptKey{dag: f[4], run: f[5], task: f[6], try: try}
	p := &proc{key: key, pid: pid, ppid: ppid, line: at, alive: at}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch f[0] {
	case "start":
		needs, err := parseNeeds(f[8])
		if err != nil {
			r.bad = append(r.bad, fmt.Sprintf("%v: %q", err, line))
			return
		}
		p.leader = true
		a := &attempt{key: key, leader: p, needs: needs, mode: f[9], daemon: f[10]}
		r.attempts = append(r.attempts, a)
		r.leaders[leaderID(key, pid)] = a
		r.pending = append(r.pending, p)
	case "child":
		if a := r.leaders[leaderID(key, ppid)]; a != nil {
			a.children = append(a.children, p)
		} else {
			r.strays = append(r.strays, p)
		}
		r.pending = append(r.pending, p)
	case "end":
		status, err := strconv.Atoi(f[8])
		a := r.leaders[leaderID(key, pid)]
		if err != nil || a == nil {
			r.bad = append(r.bad, fmt.Sprintf("end of an unknown start: %q", line))
			return
		}
		a.end, a.status = at, status
	}
}

// snapshot copies every attempt with its processes' bounds as they are now; processes still
// alive are reported with gone = 0.
func (r *recorder) snapshot() (attempts []attempt, strays []proc, bad []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.attempts {
		c := *a
		l := *a.leader
		c.leader = &l
		c.children = nil
		for _, ch := range a.children {
			cc := *ch
			c.children = append(c.children, &cc)
		}
		attempts = append(attempts, c)
	}
	for _, s := range r.strays {
		strays = append(strays, *s)
	}
	return attempts, strays, append([]string(nil), r.bad...)
}
