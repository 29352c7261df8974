package sqlstore

import (
	"fmt"
	"strings"
)

// SetImplicitLimit sets the implicit pool's capacity on the given entries' requirement rows,
// adding the row where it is missing; capacity 0 removes it (no limit). A reload of
// max_running applies it to the waiting entries this way (§4.2).
func (t *Tx) SetImplicitLimit(entries []int64, pool string, capacity int) error {
	const batch = 400
	for len(entries) > 0 {
		n := min(len(entries), batch)
		ids := entries[:n]
		entries = entries[n:]
		args := make([]any, 0, 2*n+2)
		var q string
		if capacity > 0 {
			q = `INSERT INTO entry_requirements (entry, pool, slots, implicit, capacity) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, 1, TRUE, ?),", n), ",") +
				` ON CONFLICT (entry, pool) DO UPDATE SET capacity = excluded.capacity`
			for _, id := range ids {
				args = append(args, id, pool, capacity)
			}
		} else {
			q = `DELETE FROM entry_requirements WHERE pool = ? AND entry IN (` +
				strings.TrimSuffix(strings.Repeat("?,", n), ",") + `)`
			args = append(args, pool)
			for _, id := range ids {
				args = append(args, id)
			}
		}
		// Not t.exec: its statement cache is for fixed texts, and these vary with n.
		if _, err := t.execOnce(q, args...); err != nil {
			return fmt.Errorf("set implicit limit: %w", err)
		}
		// The entries changed: stamped, other daemons read their new requirements.
		stamp := append(make([]any, 0, n+1), t.stamp())
		for _, id := range ids {
			stamp = append(stamp, id)
		}
		if _, err := t.execOnce(`UPDATE queue_entries SET seq = ? WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", n), ",")+`)`, stamp...); err != nil {
			return fmt.Errorf("set implicit limit: %w", err)
		}
	}
	return nil
}
