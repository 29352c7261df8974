package runner

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
)

// flaky fails every write while full is set, as a full disk does.
type flaky struct {
	full bool
	buf  bytes.Buffer
}

func (f *flaky) Write(p []byte) (int, error) {
	if f.full {
		return 0, syscall.ENOSPC
	}
	return f.buf.Write(p)
}

// chunks feeds one chunk per Read and lets the test change the writer between chunks.
type chunks struct {
	parts  []string
	before func(i int)
	i      int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.i == len(c.parts) {
		return 0, errors.New("EOF")
	}
	c.before(c.i)
	n := copy(p, c.parts[c.i])
	c.i++
	return n, nil
}

// TestDrainKeepsReading: while the log cannot be written the pipe is still read (the task never
// blocks) and the output dropped; once writes succeed again one marker line says how much was
// lost and why, and the error was reported once.
func TestDrainKeepsReading(t *testing.T) {
	t.Parallel()
	w := &flaky{}
	src := &chunks{parts: []string{"one\n", "lost1\n", "lost2\n", "three\n", "four\n"}, before: func(i int) {
		w.full = i == 1 || i == 2
	}}
	var reports []error
	dropped := drain(w, src, func(err error) { reports = append(reports, err) })
	want := "one\npoolflow: 12 bytes of output dropped: no space left on device\nthree\nfour\n"
	if got := w.buf.String(); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if dropped != 12 || len(reports) != 1 || !strings.Contains(reports[0].Error(), "no space") {
		t.Errorf("dropped %d, reports %v", dropped, reports)
	}
}

// TestDrainMarkerOnItsOwnLine: output that stopped mid-line when the log could not be written
// any more gets a newline before the marker, so the marker is a line of its own (it used to be
// glued to the half line: "partialpoolflow: 6 bytes of output dropped").
func TestDrainMarkerOnItsOwnLine(t *testing.T) {
	t.Parallel()
	w := &flaky{}
	src := &chunks{parts: []string{"one\npart", "lost1\n", "ial\nthree\n"}, before: func(i int) {
		w.full = i == 1
	}}
	drain(w, src, nil)
	want := "one\npart\npoolflow: 6 bytes of output dropped: no space left on device\nial\nthree\n"
	if got := w.buf.String(); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}
