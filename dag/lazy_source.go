package dag

import "sync"

// lazySource is a DAG's sourceMap, or, for a file that decoded without a single bad field, the
// file's bytes to decode again the first time a check needs a position. A clean DAG's checks
// only ask for positions to report an error, and a loaded DAG lives as long as its file is
// unchanged: at 100,000 tasks the map is about 40 MB, the bytes about 4 MB.
type lazySource struct {
	file  string
	clean bool // no field failed to decode: isBad is false everywhere, nothing to build

	once sync.Once
	data []byte
	m    *sourceMap
}

// shed makes d keep data instead of its sourceMap, when nothing in the map is bad. data must not
// change afterwards.
func (d *DAG) shed(data []byte) {
	if d.src == nil || d.src.m == nil || d.src.m.anyBad {
		return
	}
	d.src = &lazySource{file: d.src.m.file, clean: true, data: data}
}

// get returns the sourceMap, decoding the bytes again if it was shed. Decoding is deterministic,
// so the rebuilt map has the same task indexes as the DAG.
func (l *lazySource) get() *sourceMap {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		if l.m == nil && l.data != nil {
			if d, _ := decode(l.file, l.data); d != nil {
				l.m = d.src.m
			}
			l.data = nil
		}
	})
	return l.m
}

func (l *lazySource) isBad(task int, path string) bool {
	if l == nil || l.clean {
		return false
	}
	return l.get().isBad(task, path)
}
