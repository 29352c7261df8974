package dag

import "strings"

// Task indexes of sourceMap entries that are not a task of the DAG.
const (
	srcDAG         = -1 // DAG-level fields
	srcDefaultArgs = -2 // default_args, copied to the tasks that inherit them
)

// sourceMap remembers where each field of a YAML DAG was written, so that the checks that run
// on the model (Validate) can still name the line and column of the offending token. Tasks are
// keyed by their index in DAG.Tasks because ids may be missing or duplicated; each task has its
// own table so that copying default_args into a task costs the size of default_args, not of
// the whole file.
type sourceMap struct {
	file  string
	tasks map[int]*taskSource
}

// taskSource is what the sourceMap knows about one task (or the DAG, or default_args).
type taskSource struct {
	pos map[string]srcPos
	// bad marks fields whose value could not be decoded; checks on them are skipped so one
	// typo does not cascade into several errors.
	bad map[string]bool
	// name overrides the field name shown for a path: the legacy pool + pool_slots form is
	// checked as pool_requirements but reported under the names the author wrote.
	name map[string]string
	// inherited marks the top-level fields a task took from default_args: their problems are
	// reported once, under default_args, rather than once per task.
	inherited map[string]bool
}

type srcPos struct{ line, col int }

func newSourceMap(file string) *sourceMap {
	return &sourceMap{file: file, tasks: map[int]*taskSource{}}
}

// task returns the table of task, creating it.
func (s *sourceMap) task(task int) *taskSource {
	ts := s.tasks[task]
	if ts == nil {
		ts = &taskSource{pos: map[string]srcPos{}}
		s.tasks[task] = ts
	}
	return ts
}

func (s *sourceMap) put(task int, path string, p srcPos) {
	if p.line > 0 {
		s.task(task).pos[path] = p
	}
}

func (s *sourceMap) markBad(task int, path string) {
	ts := s.task(task)
	if ts.bad == nil {
		ts.bad = map[string]bool{}
	}
	ts.bad[path] = true
}

func (s *sourceMap) setName(task int, path, name string) {
	ts := s.task(task)
	if ts.name == nil {
		ts.name = map[string]string{}
	}
	ts.name[path] = name
}

func (s *sourceMap) setInherited(task int, field string) {
	ts := s.task(task)
	if ts.inherited == nil {
		ts.inherited = map[string]bool{}
	}
	ts.inherited[field] = true
}

// isBad reports whether path or any field above it failed to decode.
func (s *sourceMap) isBad(task int, path string) bool {
	if s == nil {
		return false
	}
	ts := s.tasks[task]
	if ts == nil || len(ts.bad) == 0 {
		return false
	}
	for p := path; ; p = parentPath(p) {
		if ts.bad[p] {
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
	if ts := s.tasks[task]; ts != nil {
		for p := path; ; p = parentPath(p) {
			if pos, ok := ts.pos[p]; ok {
				return pos
			}
			if p == "" {
				break
			}
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
		if ts := s.tasks[task]; ts != nil {
			if n, ok := ts.name[path]; ok {
				return n
			}
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
	if src := s.tasks[from]; src != nil {
		for k, v := range src.pos {
			if under(k) {
				s.put(to, k, v)
			}
		}
		for k := range src.bad {
			if under(k) {
				s.markBad(to, k)
			}
		}
	}
	s.setInherited(to, field)
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
	ts := s.tasks[task]
	return ts != nil && ts.inherited[top]
}
