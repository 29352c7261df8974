package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/rules"
)

func (e *env) rulesCmd() *cobra.Command {
	c := &cobra.Command{Use: "rules", Short: "Test the pool rules of poolflow.yaml"}
	var attrs []string
	var params, output string
	test := &cobra.Command{
		Use:   "test --attr KEY=VALUE...",
		Short: "Say which rule and pool an attempt with these attributes gets, and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "text" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("-o: want json or text, got %q", output)}
			}
			a, err := rules.ParseAttrs(attrs, params)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			cfg, err := e.settings()
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			// The rules against the file's and the stored pools, as the daemon has them.
			st, err := e.openRead(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if st != nil {
				defer st.Close()
			}
			eff, err := config.ReadEffective(cmd.Context(), st, cfg)
			if err != nil {
				return err
			}
			if err := eff.Problems(); err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			set := eff.Rules
			if set == nil {
				set, _ = rules.Compile(nil, nil, rules.DefaultPool)
			}
			set.SetLogger(e.logger())
			if a.DAGID != "" && eff.Rules != nil && !hasAttr(attrs, "team") {
				// The team of the DAG named, as the daemon reads it, so that a rule assigning
				// another team's pool is shown skipped (§15).
				dags, _, err := e.loadDAGs(cmd.Context(), cfg, st)
				if err != nil {
					return err
				}
				for _, d := range dags {
					if d.ID == a.DAGID {
						a.Team = d.Team
					}
				}
			}
			res := set.Assign(a)
			if output == "json" {
				b, err := res.JSON()
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.stdout, string(b))
				return err
			}
			fmt.Fprint(e.stdout, res.Text())
			return nil
		},
	}
	test.Flags().StringArrayVar(&attrs, "attr", nil, "an attribute KEY=VALUE (dag_id, task_id, run_id, owner, team, tags, trigger, try_number, kind, logical_date, item, map_index); team defaults to the team of the DAG dag_id names; item is a mapped instance's item as JSON ({\"shard\": 2}) or a word")
	test.Flags().StringVar(&params, "params", "", "params as a JSON object")
	test.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	c.AddCommand(test)
	return c
}

// hasAttr reports whether one of the --attr values sets key.
func hasAttr(attrs []string, key string) bool {
	for _, kv := range attrs {
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}
