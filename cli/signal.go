package cli

import "context"

// cancelOnInterrupt returns ctx cancelled by the first interrupt (Ctrl-C).
// A session operation (a restore, a fork, an import, an inspection) has no
// turn for the first Ctrl-C to cancel, so it stops the operation instead;
// every step the operation takes ends when ctx does.
func cancelOnInterrupt(ctx context.Context, interrupt <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if interrupt == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-interrupt:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
