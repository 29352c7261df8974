package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolflow/poolflow/backfill"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// Issue 19's figure for backfills (§11): creating a backfill of 1,000 hourly dates (target
// < 1 s), as a user does it — `poolflow dags backfill` from the shell, process start, DAG
// loading and validation included — and its store half alone (backfill.Check and
// backfill.Create in one write transaction, SQLite synchronous=full), and the dry run's.

const backfillDatesN = 1000

var backfillBenchDAG = `schedule: '@hourly'
tasks:
  - {id: extract, bash: 'true', pool_requirements: {default: 1}}
  - {id: load, depends_on: [extract], bash: 'true', pool_requirements: {default: 1}}
`

type backfillFigures struct {
	cli, create, dry []time.Duration
}

func (b *bench) measureBackfill() (backfillFigures, error) {
	var f backfillFigures
	ctx := context.Background()
	proj := filepath.Join(b.dir, "backfill")
	dags := filepath.Join(proj, "dags")
	if err := os.MkdirAll(dags, 0o755); err != nil {
		return f, err
	}
	if err := os.WriteFile(filepath.Join(dags, "hourly.yaml"), []byte(backfillBenchDAG), 0o644); err != nil {
		return f, err
	}
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		// Each round backfills its own range: ranges of one DAG may not overlap.
		start := from.Add(time.Duration(i*backfillDatesN) * time.Hour)
		end := start.Add(time.Duration(backfillDatesN-1) * time.Hour)
		cmd := exec.Command(b.bin, "--dags", dags, "--state", filepath.Join(proj, "state"), "dags", "backfill", "hourly",
			"--from", start.Format(time.RFC3339), "--to", end.Format(time.RFC3339))
		cmd.Dir = proj
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return f, fmt.Errorf("poolflow dags backfill: %v\n%s", err, out)
		}
		f.cli = append(f.cli, time.Since(t0))
		if !strings.Contains(string(out), fmt.Sprintf("%d dates", backfillDatesN)) {
			return f, fmt.Errorf("unexpected answer: %s", out)
		}
	}
	st, err := store.Open(ctx, filepath.Join(proj, "state", "poolflow.db"), store.Options{})
	if err != nil {
		return f, err
	}
	defer st.Close()
	g, errs := dag.Parse(filepath.Join(dags, "hourly.yaml"), []byte(backfillBenchDAG), dag.LoadOptions{})
	if len(errs) > 0 {
		return f, errs[0]
	}
	for i := 5; i < 25; i++ {
		start := from.Add(time.Duration(i*backfillDatesN) * time.Hour)
		req := backfill.Request{DAGID: g.ID, From: start, To: start.Add(time.Duration(backfillDatesN-1) * time.Hour)}
		req.Normalize()
		t0 := time.Now()
		dates, err := backfill.Check(req, g, nil, 10_000)
		if err != nil {
			return f, err
		}
		if _, err := backfill.Dry(ctx, st, g, req, dates, "default"); err != nil {
			return f, err
		}
		f.dry = append(f.dry, time.Since(t0))
		t0 = time.Now()
		if dates, err = backfill.Check(req, g, nil, 10_000); err != nil {
			return f, err
		}
		if _, err := backfill.Create(ctx, st, req, dates, "bench", time.Now()); err != nil {
			return f, err
		}
		f.create = append(f.create, time.Since(t0))
	}
	return f, nil
}

func printBackfill(out io.Writer, f backfillFigures) {
	fmt.Fprintf(out, "\nbackfill of %d hourly dates (SQLite, synchronous=full; target < 1 s): `poolflow dags backfill` %v median, %v best (%d runs, process start and DAG loading included); check + create %v median, %v worst (%d); dry run %v median\n",
		backfillDatesN, median(slices.Clone(f.cli)).Round(time.Millisecond), slices.Min(f.cli).Round(time.Millisecond), len(f.cli),
		us(median(slices.Clone(f.create))), us(slices.Max(f.create)), len(f.create), us(median(slices.Clone(f.dry))))
}
