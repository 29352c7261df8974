package dag

import "strings"

// Task indexes of sourceMap entries that are not a task of the DAG.
const (
	srcDAG         = -1 // DAG-level fields
	srcDefaultArgs = -2 // default_args, copied to the tasks that inherit them
)

// sourceMap remembers where each field of a YAML DAG was written, so that the checks that run
// on the model (Validate) can still name the line and column of the offending token. Tasks are
// keyed by their index in DAG.Tasks because ids may be missing or duplicated.
type sourceMap struct {
	file string
	pos  map[srcKey]srcPos
	// bad marks fields whose value could not be decoded; checks on them are skipped so one
	// typo does not cascade into several errors.
	bad map[srcKey]bool
	// name overrides the field name shown for a path: the legacy pool + pool_slots form is
	// checked as pool_requirements but reported under the names the author wrote.
	name map[srcKey]string
	// inherited marks the top-level fields a task took from default_args: their problems are
	// reported once, under default_args, rather than once per task.
	inherited map[srcKey]bool
}

type srcKey struct {
	task int
	path string
}

type srcPos struct{ line, col int }

func newSourceMap(file string) *sourceMap {
	return &sourceMap{
		file:      file,
		pos:       map[srcKey]srcPos{},
		bad:       map[srcKey]bool{},
		name:      map[srcKey]string{},
		inherited: map[srcKey]bool{},
	}
}

func (s *sourceMap) put(task int, path string, p srcPos) {
	if p.line > 0 {
		s.pos[srcKey{task, path}] = p
	}
}

func (s *sourceMap) markBad(task int, path string) { s.bad[srcKey{task, path}] = true }

// isBad reports whether path or any field above it failed to decode.
func (s *sourceMap) isBad(task int, path string) bool {
	if s == nil {
		return false
	}
	for p := path; ; p = parentPath(p) {
		if s.bad[srcKey{task, p}] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

// at returns the position of path in task, falling back to the closest enclosing field, then
// to the task, then to the DAG.
func (s *sourceMap) at(task int, path string) srcPos {
	if s == nil {
		return srcPos{}
	}
	for p := path; ; p = parentPath(p) {
		if pos, ok := s.pos[srcKey{task, p}]; ok {
			return pos
		}
		if p == "" {
			break
		}
	}
	if task != srcDAG {
		return s.at(srcDAG, "")
	}
	return srcPos{}
}

// display returns the field name shown for path.
func (s *sourceMap) display(task int, path string) string {
	if s != nil {
		if n, ok := s.name[srcKey{task, path}]; ok {
			return n
		}
	}
	return strings.TrimSuffix(path, keySuffix)
}

// copyField copies what is known about field (and everything under it) from one task index to
// another; used when a task inherits a field from default_args.
func (s *sourceMap) copyField(from, to int, field string) {
	under := func(p string) bool {
		return p == field || strings.HasPrefix(p, field+".") || strings.HasPrefix(p, field+"[") ||
			strings.HasPrefix(p, field+keySuffix)
	}
	for k, v := range s.pos {
		if k.task == from && under(k.path) {
			s.pos[srcKey{to, k.path}] = v
		}
	}
	for k, v := range s.bad {
		if k.task == from && under(k.path) {
			s.bad[srcKey{to, k.path}] = v
		}
	}
	s.inherited[srcKey{to, field}] = true
}

// keySuffix marks the position of a mapping key rather than its value
// ("pool_requirements.db" is the slots, "pool_requirements.db:key" the pool name).
const keySuffix = ":key"

// parentPath strips the last segment of a field path: "a.b:key" -> "a.b" -> "a" -> "".
func parentPath(p string) string {
	if base, ok := strings.CutSuffix(p, keySuffix); ok {
		return base
	}
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// fromDefaults reports whether path of task was inherited from default_args.
func (s *sourceMap) fromDefaults(task int, path string) bool {
	if s == nil || task < 0 {
		return false
	}
	top := path
	if i := strings.IndexAny(top, ".[:"); i >= 0 {
		top = top[:i]
	}
	return s.inherited[srcKey{task, top}]
}
