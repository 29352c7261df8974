package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
)

// DAG versions (§12): each distinct source of a DAG kept once, numbered per DAG.

// VersionKeys lists every stored version's DAG, number and hash, without the texts: what a
// load needs to number the versions it records (a known hash keeps its number, a new one
// takes the DAG's highest + 1) before it writes them.
func (t *Tx) VersionKeys() ([]store.VersionKey, error) {
	rows, err := t.query(`SELECT dag_id, version, hash FROM dag_versions ORDER BY dag_id, version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.VersionKey
	for rows.Next() {
		var k store.VersionKey
		if err := rows.Scan(&k.DAGID, &k.Version, &k.Hash); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, k)
	}
	return out, unavailable(rows.Err())
}

// VersionOf is the number of dagID's version whose source has hash, or 0 when none has.
func (t *Tx) VersionOf(dagID, hash string) (int, error) {
	var v int
	err := t.queryRow(`SELECT version FROM dag_versions WHERE dag_id = ? AND hash = ?`, dagID, hash).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, unavailable(err)
}

// PutDAGVersion records that a load has v as dagID's version now: a new version (v.Source
// set) is inserted, seen first and last now; a known one is seen last now. The DAG's row (it
// must exist: UpsertDAG) names it as current, and the version it replaces as current is seen
// last now. A number or hash another version holds is ErrConflict.
func (t *Tx) PutDAGVersion(v *store.DAGVersion, now time.Time) error {
	at := store.Micros(now)
	var prev sql.NullInt64
	if err := t.queryRow(`SELECT version FROM dags WHERE dag_id = ?`, v.DAGID).Scan(&prev); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: no dag %s", store.ErrNotFound, v.DAGID)
		}
		return unavailable(err)
	}
	if v.Source != "" {
		_, ok, err := t.insertID(`INSERT INTO dag_versions (dag_id, version, hash, format, file, source, first_seen, last_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING version`, v.DAGID, v.Version, v.Hash, v.Format,
			v.File, v.Source, at, at)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: dag %s has a version %d or one with hash %s", store.ErrConflict, v.DAGID, v.Version, v.Hash)
		}
	} else {
		res, err := t.exec(`UPDATE dag_versions SET last_seen = ? WHERE dag_id = ? AND version = ? AND hash = ?`, at, v.DAGID,
			v.Version, v.Hash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: dag %s has no version %d with hash %s", store.ErrConflict, v.DAGID, v.Version, v.Hash)
		}
	}
	if prev.Valid && prev.Int64 != int64(v.Version) {
		if _, err := t.exec(`UPDATE dag_versions SET last_seen = ? WHERE dag_id = ? AND version = ?`, at, v.DAGID,
			prev.Int64); err != nil {
			return err
		}
	}
	_, err := t.exec(`UPDATE dags SET version = ? WHERE dag_id = ?`, v.Version, v.DAGID)
	return err
}

const versionCols = `v.dag_id, v.version, v.hash, v.format, v.file, v.first_seen, v.last_seen,
	COALESCE(d.version = v.version, FALSE)`

func scanVersion(sc interface{ Scan(...any) error }, source *string) (store.DAGVersion, error) {
	var v store.DAGVersion
	var first, last int64
	dst := []any{&v.DAGID, &v.Version, &v.Hash, &v.Format, &v.File, &first, &last, &v.Current}
	if source != nil {
		dst = append(dst, source)
	}
	err := sc.Scan(dst...)
	v.FirstSeen, v.LastSeen = store.FromMicros(first), store.FromMicros(last)
	return v, err
}

// ListDAGVersions lists dagID's versions, newest first, without their texts, and how many it
// has in all.
func (s *DB) ListDAGVersions(ctx context.Context, dagID string, limit, offset int) ([]store.DAGVersion, int, error) {
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM dag_versions WHERE dag_id = ?`, dagID).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT `+versionCols+` FROM dag_versions v LEFT JOIN dags d ON d.dag_id = v.dag_id
		WHERE v.dag_id = ? ORDER BY v.version DESC LIMIT ? OFFSET ?`, dagID, limit, max(offset, 0))
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	var out []store.DAGVersion
	for rows.Next() {
		v, err := scanVersion(rows, nil)
		if err != nil {
			return nil, 0, unavailable(err)
		}
		out = append(out, v)
	}
	return out, total, unavailable(rows.Err())
}

// GetDAGVersion reads version n of dagID with its text; n 0 is its current version. A DAG or
// version that is not stored is ErrNotFound.
func (s *DB) GetDAGVersion(ctx context.Context, dagID string, n int) (store.DAGVersion, error) {
	var src string
	cond := `v.version = ?`
	args := []any{dagID, n}
	if n == 0 {
		cond, args = `v.version = d.version`, []any{dagID}
	}
	v, err := scanVersion(s.queryRow(ctx, `SELECT `+versionCols+`, v.source FROM dag_versions v
		LEFT JOIN dags d ON d.dag_id = v.dag_id WHERE v.dag_id = ? AND `+cond, args...), &src)
	if errors.Is(err, sql.ErrNoRows) {
		if n == 0 {
			return v, fmt.Errorf("%w: dag %s has no version recorded", store.ErrNotFound, dagID)
		}
		return v, fmt.Errorf("%w: dag %s has no version %d", store.ErrNotFound, dagID, n)
	}
	v.Source = src
	return v, unavailable(err)
}
