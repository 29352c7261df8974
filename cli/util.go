package cli

import (
	"encoding/json"
	"io"
	"os"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
