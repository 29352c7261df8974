package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/backfill"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// dagsBackfillCmd is poolflow dags backfill (§11): it checks and stores a backfill as the API
// does (the daemon that drives it creates its runs), or with --dry-run says what it would do;
// with --wait it follows its progress with a bar on stderr until it is over.
func (e *env) dagsBackfillCmd() *cobra.Command {
	var from, to, reprocess, confJSON string
	var maxActive int
	var slots []string
	var reverse, dry, wait bool
	c := &cobra.Command{
		Use:   "backfill DAG_ID --from T --to T",
		Short: "Re-process a range of past dates: one backfill run per schedule fire in [--from, --to]",
		Long: "Creates a backfill: one run of type backfill per fire of the DAG's schedule between --from and --to " +
			"(RFC 3339, or a date such as 2026-01-31), at most --max-active-runs at once, oldest first (newest " +
			"first with --reverse). --reprocess decides what happens to a date that has a run already: none skips " +
			"it, failed clears a failed run's failed tasks, completed clears every ended run. --max-slots POOL=N " +
			"caps the backfill's share of a pool. --dry-run prints the runs it would create or clear and the " +
			"slot-hours each pool would need; --wait follows it with a progress bar on stderr and exits 1 if a " +
			"run failed or it was cancelled.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			req := backfill.Request{DAGID: args[0], Reprocess: vocab.Reprocess(reprocess), MaxActiveRuns: maxActive,
				Backwards: reverse}
			var err error
			if req.From, err = parseWhen("--from", from); err != nil {
				return err
			}
			if req.To, err = parseWhen("--to", to); err != nil {
				return err
			}
			if req.Conf, err = parseConf(confJSON); err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if req.MaxSlots, err = parseSlots(slots); err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			req.Normalize()
			cfg, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			v, eff, err := e.validation(ctx, cfg, st, nil)
			if err != nil {
				return err
			}
			d := findDAG(v.DAGs, req.DAGID)
			rulePools := eff.Rules.Pools()
			dates, err := backfill.Check(req, d, backfill.UsedPools(orEmpty(d), rulePools), cfg.Backfill.MaxRunsOrDefault())
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if dry {
				res, err := backfill.Dry(ctx, st, d, req, dates, defaultPool(eff))
				if err != nil {
					return err
				}
				printDryRun(e.stdout, res)
				return nil
			}
			if err := e.authorize(ctx, st, vocab.PermBackfill, orEmpty(d).Team); err != nil { // on the DAG's team (§15)
				return err
			}
			now := time.Now().UTC()
			b, err := backfill.Create(ctx, st, req, dates, e.actor(), now)
			if err != nil {
				ev := backfill.Event(e.actor(), now, req)
				return refused(ctx, st, ev, err)
			}
			fmt.Fprintf(e.stdout, "created backfill %d of dag %s: %d dates from %s to %s, %d at a time\n", b.ID, b.DAGID,
				len(dates), b.From.Format(time.RFC3339), b.To.Format(time.RFC3339), b.MaxActiveRuns)
			if states, err := st.ListDAGStates(ctx); err == nil && states[b.DAGID].Paused {
				fmt.Fprintf(e.stderr, "warning: dag %s is paused: the backfill's runs wait until it is unpaused\n", b.DAGID)
			}
			if !wait {
				return nil
			}
			return e.followBackfill(ctx, st, b.ID)
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "the first logical date (RFC 3339, or YYYY-MM-DD)")
	f.StringVar(&to, "to", "", "the last logical date (RFC 3339, or YYYY-MM-DD)")
	f.StringVar(&reprocess, "reprocess", string(vocab.ReprocessNone), "what a date with a run already gets: none, failed or completed")
	f.IntVar(&maxActive, "max-active-runs", 1, "how many of its runs may be open at once")
	f.BoolVar(&reverse, "reverse", false, "newest date first")
	f.BoolVar(&dry, "dry-run", false, "print what it would do and the slot-hours it needs; write nothing")
	f.BoolVar(&wait, "wait", false, "follow its progress on stderr until it is over")
	f.StringVar(&confJSON, "conf", "", "JSON object: the runs' conf (dag_run_conf)")
	f.StringArrayVar(&slots, "max-slots", nil, "POOL=N: the backfill's share of a pool (repeatable)")
	_ = c.MarkFlagRequired("from")
	_ = c.MarkFlagRequired("to")
	return c
}

// defaultPool is the pool the rules in force give a task no rule matches.
func defaultPool(eff *config.Effective) string {
	if eff.Rules == nil {
		return rules.DefaultPool
	}
	return eff.Rules.DefaultPool()
}

// orEmpty is a DAG's or none's used pools' DAG.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// parseSlots reads --max-slots POOL=N flags.
func parseSlots(flags []string) (map[string]int, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]int{}
	for _, f := range flags {
		pool, n, ok := strings.Cut(f, "=")
		v, err := strconv.Atoi(n)
		if !ok || pool == "" || err != nil {
			return nil, fmt.Errorf("--max-slots: %q: want POOL=N", f)
		}
		out[pool] = v
	}
	return out, nil
}

// printDryRun prints what a backfill would do with each date, and the slot-hours per pool.
func printDryRun(w io.Writer, res backfill.DryRun) {
	for _, p := range res.Plan {
		line := fmt.Sprintf("%s  %-8s", p.LogicalDate.Format(time.RFC3339), p.Action)
		if p.Reason != "" {
			line += "  " + p.Reason
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "%d dates: %d to create, %d to clear, %d to skip\n", len(res.Plan), res.Create, res.Clear, res.Skip)
	pools := make([]string, 0, len(res.SlotHours))
	for p := range res.SlotHours {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, p := range pools {
		fmt.Fprintf(w, "pool %s: %.2f slot-hours\n", p, res.SlotHours[p])
	}
	if len(res.NoHistory) > 0 {
		fmt.Fprintf(w, "not counted (never ran): %s\n", strings.Join(res.NoHistory, ", "))
	}
	if o := res.Overlaps; o != nil {
		fmt.Fprintf(w, "warning: backfill %d of dag %s overlaps this range: creating it would be refused\n", o.ID, o.DAGID)
	}
}

// followPoll is how often --wait reads the backfill's progress from the store (the CLI has no
// daemon to be told by).
const followPoll = 250 * time.Millisecond

// followBackfill prints a backfill's progress bar on stderr until it is over: redrawn in place
// on a terminal, a line per change otherwise. A run that failed, or a cancelled backfill, exits 1.
func (e *env) followBackfill(ctx context.Context, st store.Store, id int64) error {
	tty := isTerminal(e.stderr)
	last := ""
	for {
		b, err := st.GetBackfill(ctx, id)
		if err != nil {
			return err
		}
		line := progressLine(b)
		if line != last {
			if tty {
				fmt.Fprintf(e.stderr, "\r%s", line)
			} else {
				fmt.Fprintln(e.stderr, line)
			}
			last = line
		}
		if b.State.Terminal() {
			if tty {
				fmt.Fprintln(e.stderr)
			}
			p := b.Progress
			switch {
			case b.State == vocab.BackfillCancelled:
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("backfill %d was cancelled", id)}
			case p.Failed > 0:
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("backfill %d: %d of %d runs failed", id, p.Failed, p.Total-p.Skipped)}
			}
			fmt.Fprintf(e.stdout, "backfill %d completed: %d done, %d skipped\n", id, p.Done, p.Skipped)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// progressWidth is the bar's width in characters.
const progressWidth = 30

// progressLine draws a backfill's progress: done (#), failed (!), running (>), left (.).
func progressLine(b store.Backfill) string {
	p := b.Progress
	n := p.Total - p.Skipped
	bar := strings.Repeat(".", progressWidth)
	if n > 0 {
		cells := []byte(bar)
		i := 0
		for _, part := range []struct {
			count int
			c     byte
		}{{p.Done, '#'}, {p.Failed, '!'}, {p.Running, '>'}} {
			for k := 0; k < part.count*progressWidth/n && i < progressWidth; k++ {
				cells[i] = part.c
				i++
			}
		}
		bar = string(cells)
	}
	return fmt.Sprintf("backfill %d [%s] %d/%d  done %d  failed %d  running %d  left %d  skipped %d  (%s)", b.ID, bar,
		p.Done+p.Failed, n, p.Done, p.Failed, p.Running, p.Left, p.Skipped, b.State)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
