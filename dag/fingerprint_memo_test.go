package dag

import "testing"

// TaskFingerprint is Fingerprint, kept per task; a task replaced in Tasks gets its own.
func TestTaskFingerprintMemo(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "fp.yaml", "tasks:\n  - {id: a, bash: echo a}\n  - {id: b, bash: echo b, depends_on: [a]}\n")
	for i, task := range d.Tasks {
		if got, want := d.TaskFingerprint(i), task.Fingerprint(); got != want {
			t.Errorf("task %d: %s, want %s", i, got, want)
		}
	}
	replaced := *d.Tasks[1]
	replaced.Retries = 3
	d.Tasks[1] = &replaced
	if got, want := d.TaskFingerprint(1), replaced.Fingerprint(); got != want || got == d.TaskFingerprint(0) {
		t.Errorf("a replaced task kept the old fingerprint: %s, want %s", got, want)
	}
}
