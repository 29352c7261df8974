package runner

import (
	"os"
	"path/filepath"
	"strings"
)

// maxParamsEnv is the largest POOLFLOW_PARAMS passed in the environment; larger params (a DAG's
// own defaults can be large) go to a file named by POOLFLOW_PARAMS_FILE instead.
const maxParamsEnv = 64 << 10

// paramsEnv is the attempt's params variable: POOLFLOW_PARAMS with the JSON, or, when that would
// be too large for the environment, POOLFLOW_PARAMS_FILE naming a file beside the attempt's log.
func (r *Runner) paramsEnv(a *attemptRun, params []byte) string {
	if len(params) <= maxParamsEnv {
		return "POOLFLOW_PARAMS=" + string(params)
	}
	path := strings.TrimSuffix(a.logPath, ".log") + ".params.json"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		if err := os.WriteFile(path, params, 0o600); err == nil {
			return "POOLFLOW_PARAMS_FILE=" + path
		}
	}
	r.cfg.Logger.Warn("params too large for the environment and could not be written to a file; passing none",
		a.logAttrs("bytes", len(params))...)
	return "POOLFLOW_PARAMS_FILE="
}
