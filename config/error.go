package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Error is one problem in a configuration file, located at the offending token.
type Error struct {
	File         string
	Line, Column int    // 0 when the problem has no single place
	Field        string // dotted path, e.g. pools.warehouse.ordering; "" for syntax errors
	Msg          string
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, msg)
	case e.File != "":
		return e.File + ": " + msg
	}
	return msg
}

// Position locates the error for a joined report.
func (e *Error) Position() (line, column int) { return e.Line, e.Column }

// joinAll orders the file's errors and the extra ones (those that know their Position among
// them; the others last) and joins them, one per line.
func joinAll(errs []*Error, extra []error) error {
	all := make([]error, 0, len(errs)+len(extra))
	for _, e := range errs {
		all = append(all, e)
	}
	all = append(all, extra...)
	at := func(e error) (int, int) {
		var p Positioned
		if errors.As(e, &p) {
			if l, c := p.Position(); l > 0 {
				return l, c
			}
		}
		return 1 << 30, 0
	}
	slices.SortStableFunc(all, func(a, b error) int {
		la, ca := at(a)
		lb, cb := at(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return errors.Join(all...)
}

// joinErrors orders errors by position and joins them, one per line; errors.As finds each.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
