package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/poolflow/poolflow/store"
	_ "github.com/poolflow/poolflow/store/postgres"
	_ "github.com/poolflow/poolflow/store/sqlite"
	"github.com/poolflow/poolflow/vocab"
)

// Daemons on one store (issue 13): a scheduled (leader-owned) fan-out run by `poolflow serve`
// daemons, each with max_running 8 and a state folder of its own, on SQLite (one file) and on
// PostgreSQL (a throw-away server of scripts/pg-test-server, durable: fsync on, comparable with
// SQLite's synchronous=full). A run is timed from its creation to its end as the store records
// them (queued_at, end_date): the DAG is paused while the daemons start, and unpaused once
// every one of them is up, so its one due fire is created by whichever passes first.

// clusterCase is one line of the daemons table.
type clusterCase struct {
	name    string
	driver  string // "sqlite" or "postgres"
	daemons int
	tasks   int
	command string // the task's command, YAML flow sequence
}

func clusterCases() []clusterCase {
	var cs []clusterCase
	for _, driver := range []string{"sqlite", "postgres"} {
		for _, n := range []int{1, 3} {
			cs = append(cs, clusterCase{name: fmt.Sprintf("fanout-1k-%s-%d", driver, n), driver: driver, daemons: n,
				tasks: 1000, command: `["true"]`})
		}
	}
	for _, driver := range []string{"postgres", "sqlite"} {
		for _, n := range []int{1, 3} {
			cs = append(cs, clusterCase{name: fmt.Sprintf("sleep-3k-%s-%d", driver, n), driver: driver, daemons: n,
				tasks: 3000, command: `["sleep", "0.05"]`})
		}
	}
	return cs
}

// clusterRow is one measured case.
type clusterRow struct {
	c        clusterCase
	elapsed  time.Duration
	perOwner []int // attempts run per daemon, as the store records them
}

// pgServer is a throw-away PostgreSQL server, or why there is none.
type pgServer struct {
	dir, dsn, skip string
	dbs            int
}

// startPG starts scripts/pg-test-server with durable settings in a folder of its own.
func startPG() *pgServer {
	dir, err := os.MkdirTemp("", "poolflow-bench-pg")
	if err != nil {
		return &pgServer{skip: err.Error()}
	}
	cmd := exec.Command("scripts/pg-test-server", "start", dir)
	cmd.Env = append(os.Environ(), "PG_TEST_DURABLE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		os.RemoveAll(dir)
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return &pgServer{skip: why}
	}
	return &pgServer{dir: dir, dsn: strings.TrimSpace(string(out))}
}

func (s *pgServer) stop() {
	if s.dir != "" {
		_ = exec.Command("scripts/pg-test-server", "stop", s.dir).Run()
	}
}

// database creates a new database on the server and returns its DSN.
func (s *pgServer) database(ctx context.Context) (string, error) {
	s.dbs++
	name := fmt.Sprintf("bench%d", s.dbs)
	db, err := sql.Open("pgx", s.dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(s.dsn)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// runCluster measures every case, PostgreSQL ones only when a server could be started.
func (b *bench) runCluster(out io.Writer, only string) error {
	var rows []clusterRow
	var pg *pgServer
	defer func() {
		if pg != nil {
			pg.stop()
		}
	}()
	for _, c := range clusterCases() {
		if !selected(only, c.name) && !selected(only, "cluster") {
			continue
		}
		if c.driver == "postgres" {
			if pg == nil {
				pg = startPG()
			}
			if pg.skip != "" {
				continue
			}
		}
		r, err := b.measureCluster(c, pg)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rows = append(rows, r)
	}
	if len(rows) > 0 || pg != nil {
		printCluster(out, rows, pg)
	}
	return nil
}

func (b *bench) measureCluster(c clusterCase, pg *pgServer) (clusterRow, error) {
	ctx := context.Background()
	proj := filepath.Join(b.dir, c.name)
	dags := filepath.Join(proj, "dags")
	if err := os.MkdirAll(dags, 0o755); err != nil {
		return clusterRow{}, err
	}
	year := time.Date(time.Now().UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	var y strings.Builder
	fmt.Fprintf(&y, "dag_id: bench\nmax_active_tasks: %d\nschedule: '@yearly'\ncatchup: true\nstart_date: %s\ntasks:\n",
		c.tasks, year.Add(-time.Hour).Format(time.RFC3339))
	for i := 0; i < c.tasks; i++ {
		fmt.Fprintf(&y, "  - {id: t%06d, command: %s}\n", i, c.command)
	}
	if err := os.WriteFile(filepath.Join(dags, "bench.yaml"), []byte(y.String()), 0o644); err != nil {
		return clusterRow{}, err
	}
	cfg := filepath.Join(proj, "poolflow.yaml")
	if err := os.WriteFile(cfg, []byte("max_running: 8\npools:\n  default: -1\n"), 0o644); err != nil {
		return clusterRow{}, err
	}
	target := "sqlite:" + filepath.Join(proj, "poolflow.db")
	if c.driver == "postgres" {
		var err error
		if target, err = pg.database(ctx); err != nil {
			return clusterRow{}, err
		}
	}
	cli := func(args ...string) error {
		all := append([]string{"--config", cfg, "--dags", dags, "--state", filepath.Join(proj, "cli"), "--store", target}, args...)
		out, err := exec.Command(b.bin, all...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("poolflow %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := cli("store", "migrate"); err != nil {
		return clusterRow{}, err
	}
	if err := cli("dags", "pause", "bench"); err != nil {
		return clusterRow{}, err
	}
	st, err := store.Open(ctx, target, store.Options{})
	if err != nil {
		return clusterRow{}, err
	}
	defer st.Close()
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for i := 1; i <= c.daemons; i++ {
		state := filepath.Join(proj, fmt.Sprintf("state-d%d", i))
		lf, err := os.Create(state + ".log")
		if err != nil {
			return clusterRow{}, err
		}
		p := exec.Command(b.bin, "--config", cfg, "--dags", dags, "--state", state, "--store", target,
			"serve", "--daemon-id", fmt.Sprintf("d%d", i), "--listen", "127.0.0.1:0")
		p.Stdout, p.Stderr = lf, lf
		if err := p.Start(); err != nil {
			lf.Close()
			return clusterRow{}, err
		}
		lf.Close()
		procs = append(procs, p)
	}
	// Every daemon registered (it has loaded the DAGs by then), then the fire is let go.
	if err := waitFor(60*time.Second, "the daemons to start", func() (bool, error) {
		os, err := st.ListOwners(ctx)
		live := 0
		for _, o := range os {
			if o.Kind == vocab.OwnerDaemon && o.LeaseUntil.After(time.Now()) {
				live++
			}
		}
		return live == c.daemons, err
	}); err != nil {
		return clusterRow{}, err
	}
	if err := cli("dags", "unpause", "bench"); err != nil {
		return clusterRow{}, err
	}
	var run store.Run
	if err := waitFor(10*time.Minute, "the run to end", func() (bool, error) {
		runs, _, err := st.ListRuns(ctx, "bench", 1, 0)
		if err != nil || len(runs) == 0 {
			return false, err
		}
		run = runs[0]
		if run.State == vocab.RunFailed {
			return false, fmt.Errorf("the run failed: %s", run.ReasonCode.Say(run.Reason))
		}
		return run.State == vocab.RunSuccess, nil
	}); err != nil {
		return clusterRow{}, err
	}
	r := clusterRow{c: c, elapsed: run.EndDate.Sub(run.QueuedAt)}
	atts, err := st.RunAttempts(ctx, run.PK)
	if err != nil {
		return r, err
	}
	by := map[string]int{}
	for _, a := range atts {
		by[a.Daemon]++
	}
	for i := 1; i <= c.daemons; i++ {
		r.perOwner = append(r.perOwner, by[fmt.Sprintf("d%d", i)])
	}
	fmt.Fprintf(os.Stderr, "%s: %v, attempts per daemon %v\n", c.name, r.elapsed.Round(time.Millisecond), r.perOwner)
	return r, nil
}

// waitFor polls cond (another process's state) until it holds, fails, or limit passes.
func waitFor(limit time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func printCluster(out io.Writer, rows []clusterRow, pg *pgServer) {
	fmt.Fprintln(out, "\nscheduled fan-out run by `poolflow serve` daemons on one store, max_running 8 each,"+
		" from the run's creation to its end as the store records them")
	if pg != nil && pg.skip != "" {
		fmt.Fprintf(out, "PostgreSQL: SKIPPED (no server could be started: %s)\n", pg.skip)
	} else if pg != nil {
		fmt.Fprintln(out, "PostgreSQL: a throw-away local server (scripts/pg-test-server, PG_TEST_DURABLE=1: fsync on)")
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "work\tstore\tdaemons\trun\tadmissions/s\tattempts per daemon\tspeed-up\t")
	one := map[string]time.Duration{}
	for _, r := range rows {
		key := r.c.driver + "/" + strings.SplitN(r.c.name, "-", 3)[0] + "/" + fmt.Sprint(r.c.tasks)
		speed := "-"
		if r.c.daemons == 1 {
			one[key] = r.elapsed
		} else if base, ok := one[key]; ok {
			speed = fmt.Sprintf("%.2f× of 1", float64(base)/float64(r.elapsed))
		}
		work := fmt.Sprintf("fan-out %s `true`", count(r.c.tasks))
		if strings.HasPrefix(r.c.name, "sleep") {
			work = fmt.Sprintf("fan-out %s `sleep 0.05`", count(r.c.tasks))
		}
		per := make([]string, len(r.perOwner))
		for i, n := range r.perOwner {
			per[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%.0f\t%s\t%s\t\n", work, r.c.driver, r.c.daemons, r.elapsed.Round(time.Millisecond),
			float64(r.c.tasks)/r.elapsed.Seconds(), strings.Join(per, " / "), speed)
	}
	tw.Flush()
	for _, r := range rows {
		if strings.HasPrefix(r.c.name, "sleep") && r.c.driver == "postgres" && r.c.daemons == 3 {
			if base, ok := one["postgres/sleep/3000"]; ok {
				verdict := "met"
				if float64(base)/float64(r.elapsed) < 2.5 {
					verdict = "NOT met"
				}
				fmt.Fprintf(out, "aim (issue 13): three daemons finish the scheduled 3k `sleep 0.05` fan-out on PostgreSQL "+
					"≥ 2.5× faster than one: %.2f× — %s\n", float64(base)/float64(r.elapsed), verdict)
			}
		}
	}
}
