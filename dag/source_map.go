package dag

import "strings"

// Task indexes of sourceMap entries that are not a task of the DAG.
const (
	srcDAG         = -1 // DAG-level fields
	srcDefaultArgs = -2 // default_args, copied to the tasks that inherit them
)

// sourceMap remembers where each field of a YAML DAG was written (nil: nothing is recorded), so that the checks that run
// on the model (Validate) can still name the line and column of the offending token. Tasks are
// keyed by their index in DAG.Tasks because ids may be missing or duplicated; each task has its
// own table so that copying default_args into a task costs the size of default_args, not of
// the whole file. A validation runs on every load of the folder, so the map lives as long as
// its DAG: the tables are short slices searched in order (a task records a handful of fields;
// one with more than smallTable is indexed), not maps, which cost several times more per task
// at 100,000 tasks.
type sourceMap struct {
	file          string
	tasks         []taskSource // by task index
	dag, defaults taskSource   // srcDAG, srcDefaultArgs
	anyBad        bool         // some field is marked bad
}

// taskSource is what the sourceMap knows about one task (or the DAG, or default_args).
type taskSource struct {
	fields []srcField
	index  map[string]int // fields by path, once there are more than a few (a large params map)
	// names override the field name shown for a path: the legacy pool + pool_slots form is
	// checked as pool_requirements but reported under the names the author wrote.
	names []srcName
	// inherited lists the top-level fields a task took from default_args: their problems are
	// reported once, under default_args, rather than once per task.
	inherited []string
}

// srcField is one field path: where it was written (line 0: nowhere recorded), and whether
// its value could not be decoded (checks on it are skipped so one typo does not cascade into
// several errors).
type srcField struct {
	path string
	pos  srcPos
	bad  bool
}

type srcName struct{ path, name string }

type srcPos struct{ line, col int }

func newSourceMap(file string) *sourceMap {
	return &sourceMap{file: file}
}

// task returns the table of task, creating it. The pointer is valid until the next call.
func (s *sourceMap) task(task int) *taskSource {
	if task >= len(s.tasks) {
		s.tasks = append(s.tasks, make([]taskSource, task+1-len(s.tasks))...)
	}
	ts := s.lookup(task)
	if ts == nil {
		panic("sourceMap: bad task index")
	}
	return ts
}

// lookup returns the table of task, or nil.
func (s *sourceMap) lookup(task int) *taskSource {
	switch {
	case task == srcDAG:
		return &s.dag
	case task == srcDefaultArgs:
		return &s.defaults
	case task < 0 || task >= len(s.tasks):
		return nil
	}
	return &s.tasks[task]
}

// smallTable is how many fields a table searches in order before it indexes them.
const smallTable = 16

// field returns path's entry in ts, adding it.
func (ts *taskSource) field(path string) *srcField {
	if f := ts.find(path); f != nil {
		return f
	}
	if ts.fields == nil {
		ts.fields = make([]srcField, 0, 8) // a task, its id and command (keys and values), mostly
	}
	ts.fields = append(ts.fields, srcField{path: path})
	switch n := len(ts.fields); {
	case ts.index != nil:
		ts.index[path] = n - 1
	case n > smallTable:
		ts.index = make(map[string]int, 2*n)
		for i, f := range ts.fields {
			ts.index[f.path] = i
		}
	}
	return &ts.fields[len(ts.fields)-1]
}

// find returns path's entry in ts, or nil.
func (ts *taskSource) find(path string) *srcField {
	if ts.index != nil {
		if i, ok := ts.index[path]; ok {
			return &ts.fields[i]
		}
		return nil
	}
	for i := range ts.fields {
		if ts.fields[i].path == path {
			return &ts.fields[i]
		}
	}
	return nil
}

func (s *sourceMap) put(task int, path string, p srcPos) {
	if s != nil && p.line > 0 {
		s.task(task).field(path).pos = p
	}
}

func (s *sourceMap) markBad(task int, path string) {
	if s == nil {
		return
	}
	s.anyBad = true
	s.task(task).field(path).bad = true
}

func (s *sourceMap) setName(task int, path, name string) {
	if s == nil {
		return
	}
	ts := s.task(task)
	for i := range ts.names {
		if ts.names[i].path == path {
			ts.names[i].name = name
			return
		}
	}
	ts.names = append(ts.names, srcName{path, name})
}

func (s *sourceMap) setInherited(task int, field string) {
	if s == nil {
		return
	}
	ts := s.task(task)
	for _, f := range ts.inherited {
		if f == field {
			return
		}
	}
	ts.inherited = append(ts.inherited, field)
}

// isBad reports whether path or any field above it failed to decode.
func (s *sourceMap) isBad(task int, path string) bool {
	if s == nil {
		return false
	}
	ts := s.lookup(task)
	if ts == nil {
		return false
	}
	for p := path; ; p = parentPath(p) {
		if f := ts.find(p); f != nil && f.bad {
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
	if ts := s.lookup(task); ts != nil {
		for p := path; ; p = parentPath(p) {
			if f := ts.find(p); f != nil && f.pos.line > 0 {
				return f.pos
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
		if ts := s.lookup(task); ts != nil {
			for _, n := range ts.names {
				if n.path == path {
					return n.name
				}
			}
		}
	}
	return strings.TrimSuffix(path, keySuffix)
}

// copyField copies what is known about field (and everything under it) from one task index to
// another; used when a task inherits a field from default_args.
func (s *sourceMap) copyField(from, to int, field string) {
	if s == nil {
		return
	}
	under := func(p string) bool {
		return p == field || strings.HasPrefix(p, field+".") || strings.HasPrefix(p, field+"[") ||
			strings.HasPrefix(p, field+keySuffix)
	}
	if src := s.lookup(from); src != nil {
		fields := src.fields // s.task(to) may move the tables of tasks
		for _, f := range fields {
			if !under(f.path) {
				continue
			}
			if f.pos.line > 0 {
				s.put(to, f.path, f.pos)
			}
			if f.bad {
				s.markBad(to, f.path)
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
	ts := s.lookup(task)
	if ts == nil {
		return false
	}
	for _, f := range ts.inherited {
		if f == top {
			return true
		}
	}
	return false
}
