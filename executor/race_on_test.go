//go:build race

package executor

// raceEnabled: the race detector's instrumentation moves some stack buffers to the heap, so
// allocation bounds are not checked under it.
const raceEnabled = true
