package dag

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ImportError is one problem that keeps a DAG from loading (SPEC §2.3), shown like Airflow's
// import errors. Line and Column are 1-based; 0 when the problem has no position (Go DAGs, a
// file that could not be read).
type ImportError struct {
	File         string // "" for Go DAGs
	Line, Column int
	DAGID        string
	TaskID       string
	Field        string // dotted path, e.g. "pool_requirements.two"; "" for the whole DAG or task
	Value        string // the offending value as written, when there is one
	Msg          string

	// lazy computes Msg when the error is shown: naming a cycle costs a graph search, which
	// only the errors kept under the cap of a file need.
	lazy func() string
}

// maxErrorsPerFile bounds the errors reported for one file (or Go DAG): past it, one more
// error says how many were left out. A broken file often breaks in one way many times.
const maxErrorsPerFile = 20

// Error formats the problem as
// `dags/s4.yaml:3:5: dag s4, task cannot_run: pool_requirements.two: 4 slots exceed capacity 2`.
func (e *ImportError) Error() string {
	var b strings.Builder
	switch {
	case e.File == "":
		b.WriteString("go:")
		b.WriteString(e.DAGID)
	case e.Line > 0:
		b.WriteString(e.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Column))
	default:
		b.WriteString(e.File)
	}
	b.WriteString(": ")
	if e.DAGID != "" {
		b.WriteString("dag ")
		b.WriteString(e.DAGID)
		if e.TaskID != "" {
			b.WriteString(", task ")
			b.WriteString(e.TaskID)
		}
		b.WriteString(": ")
	} else if e.TaskID != "" {
		b.WriteString("task ")
		b.WriteString(e.TaskID)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// sortErrors orders errors by file, then position, keeping the order of discovery for ties so
// that a file's errors read top to bottom.
func sortErrors(errs []*ImportError) {
	slices.SortStableFunc(errs, func(a, b *ImportError) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
		)
	})
}

// finishErrors sorts the errors of one file, keeps the first maxErrorsPerFile and adds one
// "... and N more" error, placed at the first one left out, then fills in deferred messages.
func finishErrors(errs []*ImportError) []*ImportError {
	sortErrors(errs)
	if len(errs) > maxErrorsPerFile {
		cut := errs[maxErrorsPerFile]
		more := &ImportError{
			File: cut.File, Line: cut.Line, Column: cut.Column, DAGID: cut.DAGID,
			Msg: fmt.Sprintf("... and %d more", len(errs)-maxErrorsPerFile),
		}
		errs = append(errs[:maxErrorsPerFile:maxErrorsPerFile], more)
	}
	for _, e := range errs {
		if e.lazy != nil {
			e.Msg, e.lazy = e.lazy(), nil
		}
	}
	return errs
}
