package checkpoint

// Watcher is an optional ability of a Checkpointer: word of changes that
// any process made to a session, as they commit, so that a reader following
// a session (a live stream) need not poll its head.
//
// A store without it gives no word; the documented fallback is to poll
// Head. While Listening reports false (the store lost its way of hearing,
// e.g. a broken connection), changes may go unheard and the caller polls
// too.
type Watcher interface {
	// Watch returns a channel that receives a value after changes to
	// session id's log or mailbox by any process on the store: appends,
	// truncations, deletion, mailbox posts and answers. Values coalesce:
	// one may stand for several changes, and it may come for no change,
	// so the receiver reads what it needs (the head, the log, the mail).
	// stop ends the watch (idempotent); the channel is not closed. Safe
	// for concurrent use.
	Watch(id string) (changes <-chan struct{}, stop func())
	// Listening reports whether the store hears changes now; false means
	// they may be missed until it hears again.
	Listening() bool
}
