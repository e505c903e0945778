package remote

// Lost is lost, for TestLostAtTheCallersDeadline.
var Lost = lost
