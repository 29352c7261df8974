package rules

// Spec is one raw pool rule (§6) as poolflow.yaml writes it, with its position in the file:
// package config reads it, Compile compiles it.
type Spec struct {
	Name     string
	Priority int
	When     string
	Pool     string
	Slots    int // default 1
	// Line and Column locate the rule; WhenLine and WhenColumn locate its `when` value, so a
	// compile error can point into the expression.
	Line, Column         int
	WhenLine, WhenColumn int
}
