package dag

import (
	"testing"
	"unsafe"
)

// A 95,000-task DAG keeps one Task per task for as long as its file is unchanged, at about
// 57 bytes of YAML per task, every 8 bytes here add 0.14 to `make bench`'s yaml-memory figure
// (bytes of memory per byte of YAML, issue 25, target < 10). A field that most tasks leave unset belongs behind a pointer, as the
// handlers are (TaskHandlers).
func TestTaskStaysSmall(t *testing.T) {
	const limit = 288
	if got := unsafe.Sizeof(Task{}); got > limit {
		t.Fatalf("dag.Task is %d bytes, more than %d: put a field most tasks leave unset behind a pointer", got, limit)
	}
}
