package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// envOutput names the file an attempt may write its output to (§14).
const envOutput = "POOLFLOW_OUTPUT"

// MaxOutput is the largest output an attempt may publish (§14): 64 KiB of JSON.
const MaxOutput = 64 << 10

// outputPath is where an attempt's output file goes: beside its log, <try>.output.json.
func outputPath(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".output.json" }

// readOutput reads the output file a successful attempt may have written: "" when it wrote
// none (no file, or an empty one), else the JSON object, compacted. A file over MaxOutput, one
// that is not a single JSON object (a list, a truncated write) is an error that fails the
// attempt: a downstream task must not run on half a value.
func readOutput(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", envOutput, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxOutput+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", envOutput, err)
	}
	if len(b) > MaxOutput {
		size := int64(len(b))
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		return "", fmt.Errorf("output is %d bytes, over the limit of %d (64 KiB)", size, MaxOutput)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", nil
	}
	return checkOutput(b)
}

// checkOutput compacts an output and checks that it is one JSON object of at most MaxOutput.
func checkOutput(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", fmt.Errorf("output is not a JSON object: truncated after %d bytes", len(b))
		}
		return "", fmt.Errorf("output is not a JSON object: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return "", fmt.Errorf("output is not a JSON object: it is %s", jsonKind(v))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New("output is not a JSON object: more follows the object")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return "", fmt.Errorf("output is not a JSON object: %v", err)
	}
	if out.Len() > MaxOutput {
		return "", fmt.Errorf("output is %d bytes, over the limit of %d (64 KiB)", out.Len(), MaxOutput)
	}
	return out.String(), nil
}

// goOutput is the output a Go task set on its TaskContext, checked as a file's is.
func goOutput(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("output cannot be encoded as JSON: %v", err)
	}
	if len(b) > MaxOutput {
		return "", fmt.Errorf("output is %d bytes, over the limit of %d (64 KiB)", len(b), MaxOutput)
	}
	if string(b) == "null" {
		return "", nil
	}
	return checkOutput(b)
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
