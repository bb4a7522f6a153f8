package near

import (
	"container/list"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// floors remembers the newest change announced for the most recently
// changed ids, at most max of them, so that a push of an older copy is
// refused.
type floors struct {
	max   int
	order *list.List // of *floor, most recent first
	by    map[string]*list.Element
}

type floor struct {
	id      string
	version uint64
	deleted bool
}

func newFloors(max int) *floors {
	return &floors{max: max, order: list.New(), by: map[string]*list.Element{}}
}

// raise records a change of id; an older one than what is known is ignored.
func (f *floors) raise(id string, version uint64, deleted bool) {
	if el, ok := f.by[id]; ok {
		fl := el.Value.(*floor)
		if version >= fl.version {
			fl.version, fl.deleted = version, deleted
		}
		f.order.MoveToFront(el)
		return
	}
	f.by[id] = f.order.PushFront(&floor{id: id, version: version, deleted: deleted})
	if f.order.Len() > f.max {
		old := f.order.Remove(f.order.Back()).(*floor)
		delete(f.by, old.id)
	}
}

// below reports whether o is older than a change announced for its id.
func (f *floors) below(o *graph.Object) bool {
	el, ok := f.by[o.ID]
	if !ok {
		return false
	}
	fl := el.Value.(*floor)
	if fl.deleted {
		return o.Version <= fl.version
	}
	return o.Version < fl.version
}
