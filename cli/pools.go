package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Pools defined in poolflow.yaml are read-only here and over the API: change them in the file.
// Pools created with `pools set` are kept in the store. A name cannot be both.

func (e *env) poolsCmd() *cobra.Command {
	c := &cobra.Command{Use: "pools", Short: "List, create, change and delete pools"}
	c.AddCommand(e.poolsListCmd(), e.poolsSetCmd(), e.poolsDeleteCmd())
	return c
}

// PoolView is a pool with its occupancy, as `pools list -o json` prints it.
type PoolView struct {
	Name            string         `json:"name"`
	Slots           int            `json:"slots"`
	OccupiedSlots   int            `json:"occupied_slots"`
	QueuedEntries   int            `json:"queued_entries"`
	OpenSlots       int            `json:"open_slots"`
	Ordering        vocab.Ordering `json:"ordering"`
	MaxQueued       int            `json:"max_queued"`
	StarvationAfter string         `json:"starvation_after"`
	IncludeDeferred bool           `json:"include_deferred"`
	OnResize        vocab.OnResize `json:"on_resize"`
	DrainingTo      *int           `json:"draining_to"`
	Description     string         `json:"description"`
	Source          string         `json:"source"`
	// Synced is false for a pool of this poolflow.yaml that no daemon has written to the store
	// yet (none runs with this file, or it has not seen the change): it is shown as configured.
	Synced bool `json:"synced"`
}

// poolViews lists the pools of the store with their occupancy, then the pools of cfg that the
// store does not have yet, with the capacity the effective configuration gives them.
func poolViews(ctx context.Context, st store.Store, cfg *config.Config) ([]PoolView, error) {
	var ps []store.Pool
	var claims []store.Claim
	var waiting []store.Entry
	if st != nil {
		var err error
		if ps, err = st.ListPools(ctx); err != nil {
			return nil, err
		}
		if claims, err = st.ListClaims(ctx); err != nil {
			return nil, err
		}
		if waiting, err = st.ListEntries(ctx, vocab.EntryWaiting); err != nil {
			return nil, err
		}
	}
	views := []PoolView{}
	have := map[string]bool{}
	for _, p := range ps {
		have[p.Name] = true
		v := PoolView{Name: p.Name, Slots: p.Slots, Ordering: p.Ordering, MaxQueued: p.MaxQueued,
			StarvationAfter: p.StarvationAfter.String(), IncludeDeferred: p.IncludeDeferred, OnResize: p.OnResize,
			Description: p.Description, Source: p.Source, Synced: true}
		if p.TargetSlots != store.NoTarget {
			t := p.TargetSlots
			v.DrainingTo = &t
		}
		for _, c := range claims {
			if c.Pool == p.Name {
				v.OccupiedSlots += c.Slots
			}
		}
		for _, w := range waiting {
			for _, n := range w.Needs {
				if n.Pool == p.Name {
					v.QueuedEntries++
				}
			}
		}
		v.OpenSlots = p.Slots - v.OccupiedSlots
		if p.Slots == pools.Unlimited {
			v.OpenSlots = -1
		} else if v.OpenSlots < 0 {
			v.OpenSlots = 0
		}
		views = append(views, v)
	}
	eff := config.NewEffective(cfg, ps)
	for _, sp := range cfg.Pools {
		if have[sp.Name] {
			continue
		}
		slots, _ := eff.Pool(sp.Name)
		views = append(views, PoolView{Name: sp.Name, Slots: slots, OpenSlots: slots, Ordering: sp.Ordering,
			MaxQueued: sp.MaxQueued, StarvationAfter: sp.StarvationAfter.String(), IncludeDeferred: sp.IncludeDeferred,
			OnResize: sp.OnResize, Description: sp.Description, Source: "file"})
	}
	sort.SliceStable(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	return views, nil
}

func (e *env) poolsListCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "list",
		Short: "List pools with capacity and occupancy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			// A read: the store is opened read-only and nothing is synced (reads never write).
			st, err := e.openRead(ctx, cfg)
			if err != nil {
				return err
			}
			if st != nil {
				defer st.Close()
			}
			views, err := poolViews(ctx, st, cfg)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(e.stdout, map[string]any{"pools": views, "total_entries": len(views)})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSLOTS\tOCCUPIED\tQUEUED\tORDERING\tSOURCE\tDESCRIPTION")
			for _, v := range views {
				slots := fmt.Sprint(v.Slots)
				if v.Slots == pools.Unlimited {
					slots = "unlimited"
				}
				if v.DrainingTo != nil {
					slots += fmt.Sprintf(" (draining to %d)", *v.DrainingTo)
				}
				source := v.Source
				if !v.Synced {
					source += " (not synced)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", v.Name, slots, v.OccupiedSlots, v.QueuedEntries, v.Ordering,
					source, v.Description)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

// poolTeams are the team sets a change of pool name must be allowed on: the pool's teams as it
// is stored (none when it does not exist yet) and then more.
func poolTeams(ctx context.Context, st store.Store, name string, more ...[]string) [][]string {
	var out [][]string
	ps, _ := st.ListPools(ctx)
	for _, p := range ps {
		if p.Name == name {
			out = append(out, p.Teams)
		}
	}
	return append(out, more...)
}

func (e *env) poolsSetCmd() *cobra.Command {
	var teams []string
	var slots, maxQueued int
	var ordering, onResize, description string
	var starvation time.Duration
	var includeDeferred, force bool
	c := &cobra.Command{
		Use:   "set NAME --slots N",
		Short: "Create or change a stored pool (pools of poolflow.yaml are changed in the file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("starvation-after") && vocab.Ordering(ordering) == vocab.Backfill {
				starvation = 10 * time.Minute
			}
			spec := pools.Spec{Name: args[0], Slots: slots, MaxQueued: maxQueued, Ordering: vocab.Ordering(ordering),
				StarvationAfter: starvation, IncludeDeferred: includeDeferred, OnResize: vocab.OnResize(onResize), Description: description,
				Teams: teams, Source: "store"}
			for _, t := range teams {
				if t == "" || strings.ContainsAny(t, ",: \t") {
					return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--team %q: want a name without spaces, commas or colons", t)}
				}
			}
			st, _, err := e.openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizePool(ctx, st, poolTeams(ctx, st, args[0], teams)...); err != nil {
				return err
			}
			dags, _, err := e.loadDAGs(ctx, cfg, st)
			if err != nil {
				return err
			}
			ev := e.event(vocab.ActionPoolSet)
			ev.Pool, ev.Params = args[0], flagParams(cmd)
			// Only this pool's row is written; a running daemon re-validates and re-syncs.
			err = st.WithTx(ctx, func(tx store.Tx) error {
				if err := config.SetPool(tx, cfg, dags, spec, force, time.Now().UTC()); err != nil {
					return err
				}
				return tx.InsertEvent(&ev)
			})
			if err != nil {
				return refusedPool(ctx, st, ev, err)
			}
			fmt.Fprintf(e.stdout, "pool %s set to %d slots\n", args[0], slots)
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&teams, "team", nil, "a team whose DAGs may use the pool (repeatable; none = every team)")
	f.IntVar(&slots, "slots", 0, "capacity in slots; -1 = unlimited")
	f.IntVar(&maxQueued, "max-queued", 0, "backlog limit of waiting entries; 0 = none")
	f.StringVar(&ordering, "ordering", string(vocab.Backfill), "strict or backfill")
	f.DurationVar(&starvation, "starvation-after", 0, "backfill: promote entries that waited longer (default 10m; 0 = off)")
	f.BoolVar(&includeDeferred, "include-deferred", false, "reschedule sensors keep their slots of this pool between pokes")
	f.StringVar(&onResize, "on-resize", string(vocab.ResizeImmediate), "immediate or drain")
	f.StringVar(&description, "description", "", "what the pool protects")
	f.BoolVar(&force, "force", false, "shrink even below what a loaded DAG or a held claim needs")
	_ = c.MarkFlagRequired("slots")
	return c
}

func (e *env) poolsDeleteCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a stored pool (refused while a loaded DAG, a pool rule or a claim needs it, unless --force)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizePool(ctx, st, poolTeams(ctx, st, args[0])...); err != nil {
				return err
			}
			dags, _, err := e.loadDAGs(ctx, cfg, st)
			if err != nil {
				return err
			}
			ev := e.event(vocab.ActionPoolDelete)
			ev.Pool, ev.Params = args[0], flagParams(cmd)
			err = st.WithTx(ctx, func(tx store.Tx) error {
				if err := config.DeletePool(tx, cfg, dags, args[0], force, time.Now().UTC()); err != nil {
					return err
				}
				return tx.InsertEvent(&ev)
			})
			if errors.Is(err, store.ErrNotFound) {
				err = refusalf(store.ErrNotFound, "pool %s not found", pools.ShortName(args[0]))
			}
			if err != nil {
				return refusedPool(ctx, st, ev, err)
			}
			fmt.Fprintf(e.stdout, "pool %s deleted\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "delete even while a loaded DAG or a held claim needs it")
	return c
}

// refusedPool records the refusal of a pool change: not found, or in use by a DAG, a rule or a
// claim, or a pool of poolflow.yaml.
func refusedPool(ctx context.Context, st store.Store, ev store.Event, err error) error {
	if errors.Is(err, config.ErrPoolInUse) || errors.Is(err, config.ErrFilePool) {
		err = refusalf(store.ErrConflict, "%s", err)
	}
	return refused(ctx, st, ev, err)
}

// flagParams are the flags given to a command, as an event's parameters.
func flagParams(cmd *cobra.Command) string {
	m := map[string]string{}
	local := cmd.LocalFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if local.Lookup(f.Name) != nil { // not the global --config, --state…
			m[f.Name] = f.Value.String()
		}
	})
	return params(m)
}
