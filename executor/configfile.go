package executor

import (
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/rules"
)

// LoadConfig reads poolflow.yaml and reports every problem of the file in one report, in file
// order: unknown or invalid fields, pool resolution (remainder, strict pools) and the rules'
// expressions, names and priorities. Whether a rule's pool exists depends on the stored pools
// too, so that is checked by NewEffective.
func LoadConfig(path string) (*config.Config, error) {
	return config.LoadWith(path, config.Options{CheckRules: checkRules})
}

// ParseConfig is LoadConfig on contents read from path.
func ParseConfig(path string, data []byte) (*config.Config, error) {
	return config.ParseWith(path, data, config.Options{CheckRules: checkRules})
}

func checkRules(file string, specs []config.RuleSpec) []error {
	if _, err := rules.CompileFile(file, specs, nil, rules.DefaultPool); err != nil {
		return splitJoined(err)
	}
	return nil
}
