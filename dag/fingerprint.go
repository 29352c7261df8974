package dag

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fingerprintVersion changes whenever the encoding below does, so that an upgrade is seen as
// a change of every task rather than silently comparing different encodings.
const fingerprintVersion = 1

// Fingerprint is a stable hash of the task's definition: everything that decides how an attempt
// runs and what it needs (kind, argv or script, sensor, approval, env, workdir, trigger rule,
// dependencies, retries, timeouts, requirements, limits, priority). The daemon compares it
// across reloads to find changed tasks (§3.5). A Go function is represented only by the kind:
// functions cannot be compared. Call it on a task with defaults applied.
func (t *Task) Fingerprint() string {
	// The JSON object of the fields of taskFields that have a key, in table order, as
	// encoding/json writes a struct of them; a key marked ",omitempty" (every field added
	// since) is left out when zero, so that adding a field does not change the fingerprint of
	// the tasks that do not set it. Empty and absent mean the same; so must their encodings,
	// and the order of depends_on does not matter.
	s := &taskSpec{t: *t}
	if len(s.t.DependsOn) > 0 {
		s.t.DependsOn = slices.Sorted(slices.Values(s.t.DependsOn))
	} else {
		s.t.DependsOn = nil
	}
	if len(s.t.Env) == 0 {
		s.t.Env = nil
	}
	if len(s.t.PoolRequirements) == 0 {
		s.t.PoolRequirements = nil
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"V":`...)
	b = strconv.AppendInt(b, fingerprintVersion, 10)
	for i := range taskFields {
		f := &taskFields[i]
		key, omitEmpty := strings.CutSuffix(f.fp, ",omitempty")
		if key == "" {
			continue
		}
		v := f.value(s)
		if omitEmpty && reflect.ValueOf(v).Elem().IsZero() {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		switch x := v.(type) {
		case *int:
			b = strconv.AppendInt(b, int64(*x), 10)
		case *time.Duration:
			b = strconv.AppendInt(b, int64(*x), 10)
		case *bool:
			b = strconv.AppendBool(b, *x)
		default:
			// Marshalling plain values and maps (whose keys encoding/json sorts) cannot fail.
			enc, _ := json.Marshal(v)
			b = append(b, enc...)
		}
	}
	b = append(b, '}')
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// TaskFingerprint is Tasks[i].Fingerprint(), computed once per task of the DAG: the daemon
// needs it for each entry it queues and for every waiting entry at each reload.
func (d *DAG) TaskFingerprint(i int) string {
	c := memo(&d.derived.fingerprints, func() *fingerprints {
		return &fingerprints{s: make([]fingerprintSlot, len(d.Tasks))}
	})
	t := d.Tasks[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < len(c.s) && c.s[i].t == t {
		return c.s[i].fp
	}
	fp := t.Fingerprint()
	if i < len(c.s) {
		c.s[i] = fingerprintSlot{t, fp}
	}
	return fp
}

type fingerprints struct {
	mu sync.Mutex
	s  []fingerprintSlot // by task index; t tells a task replaced by hand since
}

type fingerprintSlot struct {
	t  *Task
	fp string
}
