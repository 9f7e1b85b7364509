package api

// ViewerCounter gives a board's open subscriptions over every node
// (docs/protocol.md §14), as GET /api/v1/boards/{board} reports them.
type ViewerCounter interface {
	Viewers(board string) int
}
