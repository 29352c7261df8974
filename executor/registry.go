package executor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// registry holds the loaded DAGs and the configuration they were validated against: YAML files
// of the DAGs folder and the DAGs registered from Go, checked by config.Validate against the config.Effective
// configuration (poolflow.yaml plus the stored pools). It re-validates every DAG when any input
// changes — a DAG file, poolflow.yaml, a stored pool — off the scheduler loop (watch), decoding
// only the files that changed (dag.Loader). A broken file is reported and leaves the others
// loaded; a broken poolflow.yaml is reported and the previous configuration stays in force.
type registry struct {
	dir    string
	goDAGs []*dag.DAG
	st     store.Store
	log    *slog.Logger
	loader dag.Loader
	sleep  func(time.Duration) // time.Sleep; a test counts the waits

	work sync.Mutex // one refresh at a time: the watcher's, ensure's or a request's

	mu     sync.RWMutex
	loaded bool
	dags   map[string]*dag.DAG
	errs   []*dag.ImportError
	stamp  string
	gen    uint64 // incremented by every refresh that changed what is loaded or the configuration
	eff    *config.Effective
	cfgGen uint64 // incremented when the effective configuration changed (file or stored pools)
	stored string // digest of the stored pools eff was built from
	status ConfigStatus
	// fileErr says why the newest poolflow.yaml is not in force; poolErr what is wrong with the
	// one in force given the stored pools. status.Error joins them.
	fileErr, poolErr string
	// cfgStamp and cfgData are the poolflow.yaml last read, in force or refused.
	cfgStamp string
	cfgData  []byte

	watching atomic.Bool
	reqs     chan *refreshReq
	offers   chan []store.Pool // stored pools a pass read, newest only
}

// ConfigStatus says which poolflow.yaml is in force and what is wrong, for /api/v1/health and
// the UI's banner.
type ConfigStatus struct {
	File     string    // poolflow.yaml in force; "" = defaults
	SHA256   string    // of the file's contents in force, hex; "" = defaults
	LoadedAt time.Time // when the configuration in force was loaded
	// Error says why the newest poolflow.yaml is not in force (it does not parse, or its rules
	// or pools do not hold with the stored pools), or what no longer holds in the one in force
	// since a stored pool changed. "" when all is well.
	Error string
	// Restart lists settings the file changed that take effect only when the daemon restarts.
	Restart []string
}

func newRegistry(dir string, goDAGs []*dag.DAG, st store.Store, settings *config.Config, log *slog.Logger) *registry {
	r := &registry{dir: dir, goDAGs: goDAGs, st: st, log: log, dags: map[string]*dag.DAG{}, sleep: time.Sleep,
		reqs: make(chan *refreshReq), offers: make(chan []store.Pool, 1)}
	r.eff = config.NewEffective(settings, nil)
	r.status = ConfigStatus{File: settings.File, LoadedAt: time.Now().UTC()}
	if settings.File != "" {
		r.cfgStamp, _ = fileStamp(settings.File)
		r.cfgData, _ = os.ReadFile(settings.File)
		if r.cfgData != nil {
			r.status.SHA256 = fmt.Sprintf("%x", sha256.Sum256(r.cfgData))
		}
	}
	return r
}

// dirStamp summarizes the DAG files' names, sizes and modification times; polling it is cheap
// and, unlike inotify, sees editors that replace files by rename. newest is the latest
// modification time among them.
func dirStamp(dir string) (stamp string, newest time.Time) {
	if dir == "" {
		return "", time.Time{}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "error:" + err.Error(), time.Time{}
	}
	var b strings.Builder
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		fmt.Fprintf(&b, "%s:%d:%d;", n, info.Size(), info.ModTime().UnixNano())
	}
	return b.String(), newest
}

// fileStamp is a file's size and modification time, or its error, and the modification time.
func fileStamp(path string) (string, time.Time) {
	info, err := os.Stat(path)
	if err != nil {
		return "error:" + err.Error(), time.Time{}
	}
	return fmt.Sprintf("%d:%d", info.Size(), info.ModTime().UnixNano()), info.ModTime()
}

// settleWindow is how long a changed file must stay unchanged before it is read. A writer that
// truncates and then writes (os.WriteFile, `cat >`, many editors) leaves it empty or half
// written for a moment, and a truncation need not show in the modification time; read then, an
// empty poolflow.yaml is a valid one (every file pool gone) and a half DAG file an invalid DAG
// (its runs retired). So a change is read once two looks settleWindow apart agree.
const settleWindow = 50 * time.Millisecond

// settled returns stamp's answer once two looks settleWindow apart give the same one (trying
// a few times); it looks only when the first answer differs from last, the stamp already read.
// On the first read of all (first: the DAG folder at start), an answer whose newest
// modification is a whole window old is taken at once, so a start does not wait; a writer that
// truncated a file and stalled for more than a window before writing would be caught there, as
// it is by two looks when its stall outlasts the second. Later reads always look twice: the
// watcher's looks follow writes closely, and a writer under load was seen to stall that long
// (a truncated poolflow.yaml is a valid one, without any file pool).
func settled(last string, first bool, stamp func() (string, time.Time), sleep func(time.Duration)) string {
	s, newest := stamp()
	if first && !newest.IsZero() && time.Since(newest) >= settleWindow {
		return s
	}
	for i := 0; s != last && i < 10; i++ {
		sleep(settleWindow)
		again, _ := stamp()
		if again == s {
			break
		}
		s = again
	}
	return s
}

// storedDigest summarizes the store's own pools, which the effective configuration depends on.
// The file pools a daemon synced are left out: they follow from its poolflow.yaml.
func storedDigest(ps []store.Pool) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Source == "store" {
			fmt.Fprintf(&b, "%q:%d:%d:%s:%d:%d:%v:%s;", p.Name, p.Slots, p.TargetSlots, p.Ordering, p.MaxQueued,
				p.StarvationAfter, p.IncludeDeferred, p.OnResize)
		}
	}
	return b.String()
}

// refreshReq asks for a refresh: with the stored pools just read (nil = read them when forced),
// re-reading poolflow.yaml even if its stamp is unchanged (SIGHUP), or re-validating anyway.
type refreshReq struct {
	stored     []store.Pool
	haveStored bool
	rereadFile bool
	force      bool
	// skipDir leaves the DAG folder unlooked at unless something else changed: file
	// notifications say it did not change.
	skipDir     bool
	done        chan struct{}
	changedSome bool
}

// refresh brings the registry up to date with its inputs and reports whether what is loaded or
// the configuration changed.
func (r *registry) refresh(req *refreshReq) bool {
	r.work.Lock()
	defer r.work.Unlock()
	// Only refresh writes the fields below, under work: reading them here needs no r.mu.
	eff, loaded := r.eff, r.loaded

	stored, haveStored := req.stored, req.haveStored
	if !haveStored && (req.force || !loaded) && r.st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
		ps, err := r.st.ListPools(ctx)
		cancel()
		if err == nil {
			stored, haveStored = ps, true
		}
	}
	digest := r.stored
	if haveStored {
		digest = storedDigest(stored)
	} else {
		stored = eff.Stored
	}
	storedChanged := digest != r.stored
	settings, status := eff.Settings, r.status
	fileErr, poolErr := r.fileErr, r.poolErr
	cfgStamp := r.cfgStamp
	if file := settings.File; file != "" {
		last := r.cfgStamp
		if req.rereadFile {
			last = "" // SIGHUP: read it now, once it is not being written
		}
		cfgStamp = settled(last, false, func() (string, time.Time) { return fileStamp(file) }, r.sleep)
		// A refused file is tried again when the stored pools change: they may make it valid.
		if cfgStamp != r.cfgStamp || req.rereadFile || (storedChanged && fileErr != "") {
			next, restart, ferr := r.readConfig(file, settings, stored, fileErr)
			fileErr = ferr
			if now, _ := fileStamp(file); now != cfgStamp {
				// Written while it was read: what was read may be torn. Look again next time.
				next, cfgStamp, r.cfgData = nil, "", nil
			}
			if next != nil {
				settings = next
				status.LoadedAt, status.Restart = time.Now().UTC(), restart
				status.SHA256 = fmt.Sprintf("%x", sha256.Sum256(r.cfgData))
			}
		}
	}
	effChanged := settings != eff.Settings || storedChanged || !loaded
	if effChanged {
		eff = config.NewEffective(settings, stored)
		if eff.Rules != nil {
			eff.Rules.SetLogger(r.log)
		}
		poolErr = ""
		if err := eff.Problems(); err != nil {
			poolErr = orDefault(settings.File, "the configuration") + " has problems with the pools as they are now:\n" + err.Error()
			if poolErr != r.poolErr {
				r.log.Warn("configuration problems", "err", err)
			}
		}
	}
	status.File = settings.File
	status.Error = strings.TrimSpace(fileErr + "\n" + poolErr)
	stamp := r.stamp
	if !req.skipDir || effChanged || req.force || !loaded {
		stamp = settled(r.stamp, !loaded, func() (string, time.Time) { return dirStamp(r.dir) }, r.sleep)
	}
	if !effChanged && stamp == r.stamp && loaded && !req.force {
		r.mu.Lock()
		r.cfgStamp, r.status, r.fileErr, r.poolErr = cfgStamp, status, fileErr, poolErr
		r.mu.Unlock()
		return false
	}
	v := config.Validate(config.Sources{Dir: r.dir, GoDAGs: r.goDAGs, Loader: &r.loader}, eff)
	m := make(map[string]*dag.DAG, len(v.DAGs))
	for _, d := range v.DAGs {
		m[d.ID] = d
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	same := loaded && !effChanged && sameDAGs(r.dags, m) && sameErrors(r.errs, v.Errors)
	r.dags, r.errs, r.stamp, r.loaded = m, v.Errors, stamp, true
	r.cfgStamp, r.status, r.fileErr, r.poolErr = cfgStamp, status, fileErr, poolErr
	if effChanged {
		r.eff, r.stored = eff, digest
		r.cfgGen++
	}
	if same && !effChanged {
		return false
	}
	r.gen++
	return true
}

// readConfig reads the changed poolflow.yaml. It returns the new configuration when it is
// valid with the stored pools; otherwise nil and why the previous one stays in force.
func (r *registry) readConfig(file string, cur *config.Config, stored []store.Pool, fileErr string) (*config.Config, []string, string) {
	data, err := os.ReadFile(file)
	if err == nil && fileErr == "" && slices.Equal(data, r.cfgData) {
		return nil, nil, "" // touched, not changed
	}
	had := len(r.cfgData) > 0
	r.cfgData = data
	var next *config.Config
	if err != nil {
		err = fmt.Errorf("read config: %w", err)
	} else if len(data) == 0 && had {
		// An empty file is a valid configuration without a file pool, but after a non-empty one
		// it is far more often a writer caught between truncating and writing (stalled past the
		// two looks of settled): taking it would drop every file pool and the waits on them.
		err = errors.New("the file is empty (a writer may be midway); to run without the file's pools, " +
			"write a comment line such as `# no pools`")
	} else if next, err = config.ParseChecked(file, data); err == nil {
		nextEff := config.NewEffective(next, stored)
		if err = nextEff.Problems(); err == nil {
			// A pool's new teams must not turn away the DAGs loaded now (§15).
			err = config.TeamLockouts(r.eff, nextEff, slices.Collect(maps.Values(r.dags)))
		}
	}
	if err != nil {
		msg := file + " was not reloaded; the previous configuration stays in force:\n" + err.Error()
		if msg != fileErr {
			r.log.Warn("poolflow.yaml not reloaded; the previous configuration stays in force", "file", file, "err", err)
		}
		return nil, nil, msg
	}
	next.File = cur.File
	restart := restartOnly(cur, next)
	if len(restart) > 0 {
		r.log.Warn("poolflow.yaml: these settings take effect at the next restart", "settings", strings.Join(restart, ", "))
	}
	// What is applied only at start stays as it was, so Settings says what is in force.
	next.StatePath, next.Synchronous, next.APIToken, next.AllowedHosts = cur.StatePath, cur.Synchronous, cur.APIToken, cur.AllowedHosts
	r.log.Info("configuration reloaded", "file", file, "pools", len(next.Pools), "rules", len(next.Rules),
		"max_running", next.MaxRunning)
	return next, restart, ""
}

// restartOnly names the settings that changed between a and b and apply only at start.
func restartOnly(a, b *config.Config) []string {
	var out []string
	if a.StatePath != b.StatePath {
		out = append(out, "state.path")
	}
	if a.Synchronous != b.Synchronous {
		out = append(out, "store.synchronous")
	}
	if a.APIToken != b.APIToken {
		out = append(out, "api.token")
	}
	if !slices.Equal(a.AllowedHosts, b.AllowedHosts) {
		out = append(out, "server.allowed_hosts")
	}
	return out
}

func sameDAGs(a, b map[string]*dag.DAG) bool {
	if len(a) != len(b) {
		return false
	}
	for id, d := range a {
		if b[id] != d {
			return false
		}
	}
	return true
}

func sameErrors(a, b []*dag.ImportError) bool {
	return slices.EqualFunc(a, b, func(x, y *dag.ImportError) bool { return x.Error() == y.Error() && x.File == y.File })
}

// reload re-validates when an input changed (or force) and reports whether what is loaded changed.
func (r *registry) reload(force bool) bool { return r.refresh(&refreshReq{force: force}) }

// generation counts the reloads so far; the loop compares it with the one it last applied.
func (r *registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// effective is the configuration in force and its generation.
func (r *registry) effective() (*config.Effective, uint64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.eff, r.cfgGen
}

func (r *registry) configStatus() ConfigStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.status
	s.Restart = slices.Clone(s.Restart)
	return s
}

// storedStale reports whether ps differ from the stored pools the DAGs were validated with.
func (r *registry) storedStale(ps []store.Pool) bool {
	d := storedDigest(ps)
	r.mu.RLock()
	defer r.mu.RUnlock()
	return d != r.stored
}

// request runs a refresh on the watcher goroutine, or here when no watcher runs, and waits up to
// limit for it. It reports whether the refresh finished.
func (r *registry) request(ctx context.Context, req *refreshReq, limit time.Duration) bool {
	if !r.watching.Load() {
		req.changedSome = r.refresh(req)
		return true
	}
	req.done = make(chan struct{})
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r.reqs <- req:
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
	select {
	case <-req.done:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// offer hands the watcher stored pools to re-validate against, without waiting; a newer offer
// replaces one not taken yet. With no watcher (a test run), the refresh runs here.
func (r *registry) offer(ps []store.Pool) {
	if !r.watching.Load() {
		r.refresh(&refreshReq{stored: ps, haveStored: true})
		return
	}
	for {
		select {
		case r.offers <- ps:
			return
		default:
		}
		select {
		case <-r.offers:
		default:
		}
	}
}

// ensure loads the DAGs unless they are loaded already.
func (r *registry) ensure() {
	r.mu.RLock()
	loaded := r.loaded
	r.mu.RUnlock()
	if !loaded {
		r.reload(true)
	}
}

func (r *registry) get(id string) *dag.DAG {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.dags[id]
}

func (r *registry) snapshot() ([]*dag.DAG, []*dag.ImportError) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*dag.DAG, 0, len(r.dags))
	for _, d := range r.dags {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, append([]*dag.ImportError(nil), r.errs...)
}

// importErrors groups the current errors by file for the store (Airflow's import errors).
func (r *registry) importErrors() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return ImportErrorsByFile(r.errs)
}

// ImportErrorsByFile groups import errors by file as the daemon stores them and the API lists
// them (a Go DAG's under "go:<dag id>"), one error per line in file order.
func ImportErrorsByFile(errs []*dag.ImportError) map[string]string {
	out := map[string]string{}
	for _, e := range errs {
		key := e.File
		if key == "" {
			key = "go:" + e.DAGID
		}
		if prev, ok := out[key]; ok {
			out[key] = prev + "\n" + e.Error()
		} else {
			out[key] = e.Error()
		}
	}
	return out
}
