package pools

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs every rapid property at least 2,000 times unless -rapid.checks says otherwise;
// `make fuzz` runs them much longer.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "2000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
