// Command poolflow is the poolflow daemon and CLI for YAML DAGs. Programs that register Go DAGs
// call poolflow.Main themselves (see dags/main.go).
package main

import "github.com/poolflow/poolflow"

func main() { poolflow.Main() }
