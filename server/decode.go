package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// decodeBody reads a JSON object into dst: at most maxBody bytes, unknown fields refused, one
// object and nothing after it. Every problem is a 400 naming the field (or "body"), but a body
// over maxBody, which is a 413. An empty body is {} when allowEmpty.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, detail: fmt.Sprintf("body: larger than %d bytes (1 MiB)", maxBody)}
		}
		return badRequest("body", "could not be read: %v", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		if allowEmpty {
			return nil
		}
		return badRequest("body", "a JSON object is required")
	}
	if trimmed[0] != '{' {
		return badRequest("body", "want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("body", "unexpected data after the JSON object")
	}
	return nil
}

// jsonProblem names the field a decoding error is about.
func jsonProblem(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest("body", "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "truncated JSON")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return badRequest(field, "want %s, got JSON %s", goTypeWord(typ.Type.Kind().String()), typ.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		return badRequest(strings.TrimSuffix(name, `"`), "unknown field")
	}
	return badRequest("body", "%s", strings.TrimPrefix(msg, "json: "))
}

func goTypeWord(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "map", "struct":
		return "a JSON object"
	case "slice", "array":
		return "a JSON array"
	}
	return kind
}

// rawTime parses an optional RFC 3339 time of a request body; null or absent is the zero time.
func rawTime(field string, raw json.RawMessage) (time.Time, error) {
	if isNull(raw) {
		return time.Time{}, nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return time.Time{}, badRequest(field, "want an RFC 3339 time string such as 2026-01-01T00:00:00Z")
	}
	v, err := time.Parse(time.RFC3339Nano, str)
	if err != nil {
		return time.Time{}, badRequest(field, "%q is not an RFC 3339 time such as 2026-01-01T00:00:00Z", str)
	}
	return v.UTC(), nil
}

// maxDuration bounds durations in bodies, so seconds never overflow time.Duration.
const maxDuration = 100 * 365 * 24 * time.Hour

// rawDuration parses a duration of a request body: a Go duration string ("10m") or whole seconds.
func rawDuration(field string, raw json.RawMessage) (time.Duration, error) {
	if n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64); err == nil {
		if n < 0 || n > int64(maxDuration/time.Second) {
			return 0, badRequest(field, "%d seconds is out of range", n)
		}
		return time.Duration(n) * time.Second, nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return 0, badRequest(field, `want a duration such as "10m" or whole seconds`)
	}
	v, err := time.ParseDuration(str)
	if err != nil {
		return 0, badRequest(field, `%q is not a duration such as "10m"`, str)
	}
	if v < 0 || v > maxDuration {
		return 0, badRequest(field, "%s is out of range", v)
	}
	return v, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}
