package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/poolflow/poolflow/cli"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
)

// TestViewsAgree is the property of issue 12: over random sequences of DAG edits, pool CRUD
// (through the CLI, as another process would) and poolflow.yaml edits, `dags validate`, the
// API's import errors and the daemon agree at every step on which DAGs are valid and what is
// wrong with the others. The daemon, the API and the CLI run in this process; the CLI opens the
// store as a separate process would (its own connections, read-only for reads).
func TestViewsAgree(t *testing.T) {
	restore := setRapidFlag("rapid.checks", "6")
	defer restore()
	defer setRapidFlag("rapid.steps", "14")()
	var worst time.Duration
	rapid.Check(t, func(rt *rapid.T) {
		a := newAgreement(t)
		defer a.close()
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) { worst = max(worst, a.check(rt)) },
			"write dag": func(rt *rapid.T) {
				name := rapid.SampledFrom([]string{"d0", "d1", "d2"}).Draw(rt, "dag")
				a.writeDAG(rt, name, dagBody(rt, name))
			},
			"remove dag": func(rt *rapid.T) {
				os.Remove(filepath.Join(a.dags, rapid.SampledFrom([]string{"d0", "d1", "d2"}).Draw(rt, "dag")+".yaml"))
			},
			"pools set": func(rt *rapid.T) {
				name := rapid.SampledFrom([]string{"sa", "sb", "fa"}).Draw(rt, "pool")
				slots := rapid.IntRange(1, 4).Draw(rt, "slots")
				args := []string{"pools", "set", name, "--slots", fmt.Sprint(slots)}
				if rapid.Bool().Draw(rt, "force") {
					args = append(args, "--force")
				}
				a.cli(rt, args...)
			},
			"pools delete": func(rt *rapid.T) {
				args := []string{"pools", "delete", rapid.SampledFrom([]string{"sa", "sb"}).Draw(rt, "pool")}
				if rapid.Bool().Draw(rt, "force") {
					args = append(args, "--force")
				}
				a.cli(rt, args...)
			},
			"edit config": func(rt *rapid.T) { a.editConfig(rt, configBody(rt)) },
		})
	})
	t.Logf("slowest agreement after a change: %v", worst.Round(time.Millisecond))
}

// setRapidFlag sets a rapid flag unless the command line did, and returns its restore.
func setRapidFlag(name, value string) func() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	f := flag.Lookup(name)
	if set || f == nil {
		return func() {}
	}
	old := f.Value.String()
	flag.Set(name, value)
	return func() { flag.Set(name, old) }
}

// dagBody is a DAG file: tasks needing file pools (fa, fb), stored pools (sa, sb), a pool
// nobody has, or nothing (a rule or the default pool decides); sometimes broken YAML or another
// file's dag_id.
func dagBody(rt *rapid.T, name string) string {
	switch rapid.IntRange(0, 9).Draw(rt, "kind") {
	case 0:
		return "tasks: [\n"
	case 1:
		return "dag_id: d0\ntasks:\n  - {id: t, bash: 'true'}\n"
	}
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range rapid.IntRange(1, 2).Draw(rt, "tasks") {
		fmt.Fprintf(&b, "  - id: t%d\n    bash: 'true'\n", i)
		if rapid.Bool().Draw(rt, "needs") {
			pool := rapid.SampledFrom([]string{"fa", "fb", "sa", "sb", "ghost", "default"}).Draw(rt, "pool")
			fmt.Fprintf(&b, "    pool_requirements: {%s: %d}\n", pool, rapid.IntRange(1, 3).Draw(rt, "slots"))
		}
	}
	return b.String()
}

// configBody is a poolflow.yaml: file pools fa and fb or not, a remainder default pool or not,
// a rule naming a file or a stored pool or none; sometimes a file that does not parse.
func configBody(rt *rapid.T) string {
	if rapid.IntRange(0, 7).Draw(rt, "broken") == 0 {
		return "pools:\n  fa: lots\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "max_running: %d\npools:\n", rapid.SampledFrom([]int{6, 12}).Draw(rt, "max_running"))
	for _, p := range []string{"fa", "fb"} {
		if n := rapid.IntRange(0, 3).Draw(rt, p); n > 0 {
			fmt.Fprintf(&b, "  %s: %d\n", p, n)
		}
	}
	if rapid.Bool().Draw(rt, "remainder") {
		b.WriteString("  default: {slots: remainder}\n")
	}
	if pool := rapid.SampledFrom([]string{"", "fa", "sa"}).Draw(rt, "rule"); pool != "" {
		fmt.Fprintf(&b, "rules:\n  - {name: r, priority: 1, when: 'dag_id == \"d1\"', pool: %s, slots: %d}\n", pool,
			rapid.IntRange(1, 2).Draw(rt, "rule slots"))
	}
	return b.String()
}

// agreement is one project with a running daemon and API.
type agreement struct {
	t                    *testing.T
	dir, dags, state     string
	cfgPath, inForcePath string // the watched file, and a copy of the one in force for the CLI
	st                   store.Store
	d                    *executor.Daemon
	srv                  *server.Server
	passes               chan struct{} // told of each committed pass of the daemon
}

const firstConfig = "max_running: 12\npools:\n  fa: 2\n"

func newAgreement(t *testing.T) *agreement {
	dir := t.TempDir()
	a := &agreement{t: t, dir: dir, dags: filepath.Join(dir, "dags"), state: filepath.Join(dir, "state"),
		cfgPath: filepath.Join(dir, "poolflow.yaml"), inForcePath: filepath.Join(dir, "in-force.yaml"),
		passes: make(chan struct{}, 1)}
	for _, d := range []string{a.dags, a.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{a.cfgPath, a.inForcePath} {
		if err := os.WriteFile(p, []byte(firstConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.LoadChecked(a.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if a.st, err = store.Open(context.Background(), filepath.Join(a.state, "poolflow.db"), store.Options{Synchronous: "OFF"}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a.d, err = executor.New(executor.Config{Store: a.st, Settings: cfg, DAGsDir: a.dags, StateDir: a.state, Logger: quiet,
		DaemonID: "agree", PollEvery: 10 * time.Millisecond, ShutdownGrace: time.Second,
		Notify: func(n executor.Notice) {
			if n.Kind == executor.NoticePass {
				select {
				case a.passes <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.srv = server.New(server.Config{Store: a.st, Daemon: a.d, StateDir: a.state, Settings: cfg, Logger: quiet})
	return a
}

func (a *agreement) close() {
	a.srv.Close()
	a.d.Stop()
	a.st.Close()
}

func (a *agreement) writeDAG(rt *rapid.T, name, body string) {
	writeAtomically(rt, filepath.Join(a.dags, name+".yaml"), body)
}

// writeAtomically replaces a file by renaming a full one over it. os.WriteFile truncates first:
// a writer stalled past the daemon's two looks (seen at a load of 30 on two cores: the daemon put
// an empty poolflow.yaml in force, then refused the real one) makes the views disagree about a
// file the test never meant to write. What this test checks is that the views agree on each
// file; the reading of half-written files has its own test (TestRegistryWaitsForWriters).
func writeAtomically(rt *rapid.T, path, body string) {
	tmp := filepath.Join(filepath.Dir(filepath.Dir(path)), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		rt.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		rt.Fatal(err)
	}
}

// editConfig writes poolflow.yaml and reloads it as SIGHUP would; what the daemon put in force
// becomes the CLI's configuration too (a refused file leaves the previous one in force).
func (a *agreement) editConfig(rt *rapid.T, body string) {
	writeAtomically(rt, a.cfgPath, body)
	if err := a.d.Reload(context.Background()); err != nil && !strings.Contains(err.Error(), "was not reloaded") &&
		!strings.Contains(err.Error(), "has problems") {
		rt.Fatalf("reload: %v", err)
	}
	a.followInForce(rt)
}

// followInForce gives the CLI the file the daemon has in force: the one on disk once the daemon
// took it (at once, or later, when a stored pool made a refused file valid), else the previous.
func (a *agreement) followInForce(rt *rapid.T) {
	data, err := os.ReadFile(a.cfgPath)
	if err != nil {
		rt.Fatal(err)
	}
	if a.d.ConfigStatus().SHA256 == fmt.Sprintf("%x", sha256.Sum256(data)) {
		if err := os.WriteFile(a.inForcePath, data, 0o644); err != nil {
			rt.Fatal(err)
		}
	}
}

// cli runs a command against the configuration in force, as another process would.
func (a *agreement) cli(rt *rapid.T, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	all := append([]string{"--config", a.inForcePath, "--dags", a.dags, "--state", a.state}, args...)
	err := cli.Run(context.Background(), all, &out, &errb)
	code := 0
	var ee *cli.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &ee):
		code = ee.Code
	default:
		code = 1
	}
	if err != nil {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

func errorsAs(err error, target **cli.ExitError) bool {
	for err != nil {
		if e, ok := err.(*cli.ExitError); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// view is what one party says: the valid DAG ids and every import error, sorted.
type view struct {
	DAGs   []string
	Errors []string
}

func (v view) String() string {
	return fmt.Sprintf("dags %v\nerrors:\n  %s", v.DAGs, strings.Join(v.Errors, "\n  "))
}

func sorted(v view) view {
	sort.Strings(v.DAGs)
	sort.Strings(v.Errors)
	return v
}

func (a *agreement) cliView(rt *rapid.T) (view, int) {
	out, errOut, code := a.cli(rt, "dags", "list", "-o", "json")
	if code != 0 {
		rt.Fatalf("dags list: %d %s", code, errOut)
	}
	var got struct {
		DAGs []struct {
			DAGID string `json:"dag_id"`
		} `json:"dags"`
		ImportErrors []string `json:"import_errors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		rt.Fatalf("dags list: %v\n%s", err, out)
	}
	v := view{Errors: got.ImportErrors}
	for _, d := range got.DAGs {
		v.DAGs = append(v.DAGs, d.DAGID)
	}
	_, _, validate := a.cli(rt, "dags", "validate")
	return sorted(v), validate
}

func (a *agreement) apiView(rt *rapid.T) view {
	var v view
	get := func(path string, into any) {
		rec := httptest.NewRecorder()
		a.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			rt.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			rt.Fatal(err)
		}
	}
	var ies struct {
		ImportErrors []struct {
			StackTrace string `json:"stack_trace"`
		} `json:"import_errors"`
	}
	get("/api/v1/importErrors?limit=1000", &ies)
	for _, ie := range ies.ImportErrors {
		v.Errors = append(v.Errors, strings.Split(ie.StackTrace, "\n")...)
	}
	var dags struct {
		DAGs []struct {
			DAGID string `json:"dag_id"`
		} `json:"dags"`
	}
	get("/api/v1/dags?limit=1000", &dags)
	for _, d := range dags.DAGs {
		v.DAGs = append(v.DAGs, d.DAGID)
	}
	return sorted(v)
}

func (a *agreement) daemonView() view {
	dags, errs := a.d.DAGs()
	var v view
	for _, d := range dags {
		v.DAGs = append(v.DAGs, d.ID)
	}
	for _, e := range errs {
		v.Errors = append(v.Errors, e.Error())
	}
	return sorted(v)
}

// check waits until the three views agree, and that `dags validate` fails exactly when there
// is an import error or a problem with the configuration in force; it returns how long that
// took. The views are compared again after each pass of the daemon: a change of a DAG file or
// of the stored pools is re-validated off the loop, which then passes to record it (and an
// idle daemon passes every 10 s to renew its lease). The bound here is generous because the
// machine is shared.
func (a *agreement) check(rt *rapid.T) time.Duration {
	start := time.Now()
	timeout := time.After(15 * time.Second)
	for {
		a.followInForce(rt)
		c, validate := a.cliView(rt)
		api, dm := a.apiView(rt), a.daemonView()
		problems := strings.Contains(a.d.ConfigStatus().Error, "has problems")
		agree := slices.Equal(c.DAGs, api.DAGs) && slices.Equal(c.DAGs, dm.DAGs) &&
			slices.Equal(c.Errors, api.Errors) && slices.Equal(c.Errors, dm.Errors)
		wantValidate := 0
		if len(c.Errors) > 0 || problems {
			wantValidate = 1
		}
		if agree && validate == wantValidate {
			return time.Since(start)
		}
		select {
		case <-a.passes:
		case <-timeout:
			rt.Fatalf("views disagree after %v:\n--- dags list / validate (exit %d, want %d)\n%s\n--- API\n%s\n--- daemon\n%s\n--- config status\n%+v",
				time.Since(start), validate, wantValidate, c, api, dm, a.d.ConfigStatus())
		}
	}
}
