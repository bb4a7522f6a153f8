package graph

// Ledger is a Reach that keeps, with each id admitted, what its user
// recorded of it (nil until then). A traversal read as it arrives must tell
// an id admitted and still awaited from one received; with a Reach beside a
// map of what was received, every id would be kept, looked up and grown
// into twice. Same rules as Reach.
type Ledger struct {
	rules
	ids map[string]*Object // every id ever admitted, with what was recorded of it
}

// NewLedger starts an empty ledger for budget b; sizeHint sizes its set.
func NewLedger(b Budget, sizeHint int) *Ledger {
	return &Ledger{rules: newRules(b), ids: make(map[string]*Object, sizeHint)}
}

// Admit schedules id, with nothing recorded, and reports true, unless it
// was admitted before or the budget's MaxObjects is spent. Unlike Reach's,
// it looks id up before inserting it: an insert would erase what was
// recorded of an id admitted before.
func (l *Ledger) Admit(id string) bool {
	if l.spent() {
		return false
	}
	if _, ok := l.ids[id]; ok {
		return false
	}
	l.ids[id] = nil
	l.scheduled++
	return true
}

// Get returns what was recorded of id (nil if nothing yet), and whether id
// was admitted.
func (l *Ledger) Get(id string) (o *Object, admitted bool) {
	o, admitted = l.ids[id]
	return o, admitted
}

// Record keeps o for id, which must have been admitted (Get): recording an
// id not admitted would schedule it beyond the rules.
func (l *Ledger) Record(id string, o *Object) { l.ids[id] = o }

// Recorded calls fn with every id that has something recorded.
func (l *Ledger) Recorded(fn func(id string, o *Object)) {
	for id, o := range l.ids {
		if o != nil {
			fn(id, o)
		}
	}
}
