package cli

import (
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/rules"
)

// compileRules compiles the rules of cfg against its pools.
func compileRules(cfg *config.Config) (*rules.Set, error) {
	names := map[string]bool{}
	for _, p := range cfg.Pools {
		names[p.Name] = true
	}
	return rules.Compile(cfg.Rules, func(n string) bool { return names[n] }, "default")
}
