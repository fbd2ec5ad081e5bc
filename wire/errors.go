package wire

// ErrorCode is an error's machine-readable kind, in every error body
// (Error.Code) beside the message, which is for people and may change.
// Programs act on the code (and the HTTP status), never on the message.
type ErrorCode string

// The error codes of the master's and the worker's APIs.
const (
	// CodeBadRequest (400): the request is malformed or invalid; the
	// message says which field and why. Nothing changed.
	CodeBadRequest ErrorCode = "bad_request"
	// CodeTooLarge (413): the body is over MaxBodyBytes.
	CodeTooLarge ErrorCode = "too_large"
	// CodeUnauthorized (401): no credential, or a wrong one (secret,
	// driver credential or client certificate).
	CodeUnauthorized ErrorCode = "unauthorized"
	// CodeForbidden (403): the credential is valid but may not do this
	// (a driver's credential on another app, a worker certificate asking
	// a master's command), or a browser-shaped request (cross-site Origin,
	// a Host that is not loopback, a body that is not JSON) in the
	// loopback mode.
	CodeForbidden ErrorCode = "forbidden"
	// CodeLimitReached (429): a configured cap is reached (active apps,
	// active drivers, event streams, submission size); the message names
	// it. Retry once something has ended.
	CodeLimitReached ErrorCode = "limit_reached"

	// CodeNotLeader (307): this master does not lead; Error.Leader (and
	// Location) name the one that does.
	CodeNotLeader ErrorCode = "not_leader"
	// CodeNoLeader (503): no master leads now (an election, or no quorum),
	// or this one could not confirm it still leads. Retry, on any master;
	// the master already held the request a while for an election.
	CodeNoLeader ErrorCode = "no_leader"
	// CodeNoQuorum (503): fewer masters answer this one than a quorum: no
	// leader can be elected until enough are back. Certainly not done;
	// retrying helps only once they are (a client tries the other
	// masters, then gives up at once).
	CodeNoQuorum ErrorCode = "no_quorum"
	// CodeLeaderPreparing (503): this master was just elected and is
	// reading its state; retry shortly.
	CodeLeaderPreparing ErrorCode = "leader_preparing"
	// CodeNotCommitted (503): the change was certainly not made (the
	// master lost leadership before writing it, or could not write);
	// retry, on the leader.
	CodeNotCommitted ErrorCode = "not_committed"
	// CodeDiskFull (503): the change was certainly not made: the master's
	// disk is full. A leader that cannot write gives way to one that can;
	// retry, on the leader.
	CodeDiskFull ErrorCode = "disk_full"
	// CodeOutcomeUnknown (504): the master lost leadership before it
	// learned whether the change committed; the next leader knows.
	// Repeat it: every write is safe to repeat (submissions under their
	// Idempotency-Key).
	CodeOutcomeUnknown ErrorCode = "outcome_unknown"
	// CodeShuttingDown (503): the master is stopping.
	CodeShuttingDown ErrorCode = "shutting_down"

	// CodeUnknownWorker (404): the master does not know this worker (never
	// registered, removed, or not answered a new leader yet): register
	// again, then report.
	CodeUnknownWorker ErrorCode = "unknown_worker"
	// CodeUnknownApp, CodeUnknownExecutor, CodeUnknownDriver (404): no such
	// app, executor or driver is listed.
	CodeUnknownApp      ErrorCode = "unknown_app"
	CodeUnknownExecutor ErrorCode = "unknown_executor"
	CodeUnknownDriver   ErrorCode = "unknown_driver"
	// CodeUnknownQueue (404 on a queue's route, 400 in a submission) and
	// CodeUnknownTenant (404): no such queue, no such tenant.
	CodeUnknownQueue  ErrorCode = "unknown_queue"
	CodeUnknownTenant ErrorCode = "unknown_tenant"
	// CodeEnded (409): the app or driver has ended; it can change no more.
	CodeEnded ErrorCode = "ended"
	// CodeKeyReused (422): the Idempotency-Key names a submission with
	// another description.
	CodeKeyReused ErrorCode = "key_reused"
	// CodeAddressTaken (409): another live worker is registered at this
	// host and port.
	CodeAddressTaken ErrorCode = "address_taken"
	// CodeWrongState (409): the change does not apply to the entity in its
	// state (draining a DEAD worker, undraining one not drained).
	CodeWrongState ErrorCode = "wrong_state"

	// CodeLogsUnreachable (404): the process's worker is unknown, so its
	// logs cannot be fetched; CodeWorkerUnreachable (502): the worker did
	// not answer the log request.
	CodeLogsUnreachable   ErrorCode = "logs_unreachable"
	CodeWorkerUnreachable ErrorCode = "worker_unreachable"
	// CodeNotReplicated (409): a membership change asked of a master that
	// runs alone (not --recovery-mode raft).
	CodeNotReplicated ErrorCode = "not_replicated"
	// CodeMembershipFailed (503): Raft refused or did not finish the
	// membership change.
	CodeMembershipFailed ErrorCode = "membership_failed"
	// CodeUnknownMaster (404): no master of that id is in the Raft
	// configuration.
	CodeUnknownMaster ErrorCode = "unknown_master"
	// CodeBadSnapshot (400): the file given to restore is not a snapshot
	// this master can restore (not a berth snapshot, a newer format,
	// truncated, corrupt, or too large); the message says which. Nothing
	// changed.
	CodeBadSnapshot ErrorCode = "bad_snapshot"

	// CodeStaleEpoch (409, worker API): the command comes from a master of
	// an older epoch than the newest this worker has seen: a newer leader
	// exists. Retrying cannot help.
	CodeStaleEpoch ErrorCode = "stale_epoch"
	// CodeUnknownProcess (404, worker API): the worker runs no such
	// executor or driver.
	CodeUnknownProcess ErrorCode = "unknown_process"
	// CodePortsBusy (409, worker API): a process of the host the worker
	// did not give them to holds ports of the launch; nothing started.
	// The master places it again, charging neither the app nor the
	// worker, and gives those ports to no process (Heartbeat.BusyPorts).
	CodePortsBusy ErrorCode = "ports_busy"

	// CodeInternal (500): a bug; the message says what failed.
	CodeInternal ErrorCode = "internal"
)

// ErrorCodes lists every error code, for documentation and its test.
var ErrorCodes = []ErrorCode{
	CodeBadRequest, CodeTooLarge, CodeUnauthorized, CodeForbidden, CodeLimitReached,
	CodeNotLeader, CodeNoLeader, CodeNoQuorum, CodeLeaderPreparing, CodeNotCommitted, CodeOutcomeUnknown, CodeShuttingDown,
	CodeUnknownWorker, CodeUnknownApp, CodeUnknownExecutor, CodeUnknownDriver, CodeUnknownQueue, CodeUnknownTenant, CodeEnded, CodeKeyReused, CodeAddressTaken, CodeWrongState,
	CodeLogsUnreachable, CodeWorkerUnreachable, CodeNotReplicated, CodeMembershipFailed, CodeUnknownMaster, CodeBadSnapshot,
	CodeStaleEpoch, CodeUnknownProcess, CodePortsBusy, CodeInternal,
}
