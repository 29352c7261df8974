//go:build race

package procfs

// raceEnabled: the race detector's instrumentation moves some stack buffers to the heap, so
// allocation bounds are not checked under it.
const raceEnabled = true
