package io.kvledger.core.event;

/** Helpers over {@link NodeEvent}s. Pure. */
public final class NodeEvents {

    private NodeEvents() {}

    /**
     * The same event at another time. A live loop uses it to keep journal time non-decreasing when
     * an adapter stamped an event a moment before another adapter's event that reached the inbox
     * first; benchmarks use it to move a scripted workload in time. The switch has no default, so a
     * new event type breaks the build here.
     */
    public static NodeEvent at(NodeEvent e, long t) {
        return switch (e) {
            case NodeEvent.RequestAdmitted x -> new NodeEvent.RequestAdmitted(t, x.requestId(), x.numPromptTokens(),
                    x.promptTokenIds(), x.params());
            case NodeEvent.MatchedTokensQueried x -> new NodeEvent.MatchedTokensQueried(t, x.requestId(),
                    x.numComputedTokens(), x.acted());
            case NodeEvent.BlocksAllocated x -> new NodeEvent.BlocksAllocated(t, x.requestId(), x.blocks(),
                    x.numExternalTokens());
            case NodeEvent.StepScheduled x -> new NodeEvent.StepScheduled(t, x.step(), x.cachedRequests(),
                    x.scheduledNewReqs(), x.preemptedReqIds());
            case NodeEvent.RequestFinished x -> new NodeEvent.RequestFinished(t, x.requestId(), x.status(), x.blockIds(),
                    x.admittedRequestId(), x.acted());
            case NodeEvent.ConnectorOutputReceived x -> new NodeEvent.ConnectorOutputReceived(t, x.finishedSending(),
                    x.finishedRecving(), x.acted());
            case NodeEvent.LoadStarted x -> new NodeEvent.LoadStarted(t);
            case NodeEvent.LayerSaved x -> new NodeEvent.LayerSaved(t, x.layerName());
            case NodeEvent.SaveWaited x -> new NodeEvent.SaveWaited(t);
            case NodeEvent.FinishedPolled x -> new NodeEvent.FinishedPolled(t);
            case NodeEvent.HandshakeCompleted x -> new NodeEvent.HandshakeCompleted(t, x.key());
            case NodeEvent.HandshakeFailed x -> new NodeEvent.HandshakeFailed(t, x.key(), x.reason());
            case NodeEvent.HandshakeVoted x -> new NodeEvent.HandshakeVoted(t, x.remoteEngineId(), x.vote(),
                    x.failedTpRanks());
            case NodeEvent.TransferCompleted x -> new NodeEvent.TransferCompleted(t, x.statusId(), x.succeeded(),
                    x.code(), x.message());
            case NodeEvent.RemoteBlocksReceived x -> new NodeEvent.RemoteBlocksReceived(t, x.reqId(), x.transferId(),
                    x.blockNotifyList(), x.decodeRank(), x.legacyWithoutType());
            case NodeEvent.WriteDoneReceived x -> new NodeEvent.WriteDoneReceived(t, x.transferId());
            case NodeEvent.ReleaseReceived x -> new NodeEvent.ReleaseReceived(t, x.transferId(), x.consumerTpSize());
            case NodeEvent.RawCompletionReceived x -> new NodeEvent.RawCompletionReceived(t, x.completionId());
            case NodeEvent.FrameRejected x -> new NodeEvent.FrameRejected(t, x.reason(), x.frame(),
                    x.wouldKillPythonListener());
            case NodeEvent.NotifySendFailed x -> new NodeEvent.NotifySendFailed(t, x.endpoint(), x.messageType(),
                    x.transferId(), x.reason(), x.frame());
            case NodeEvent.ShutDown x -> new NodeEvent.ShutDown(t, x.closeFailures());
            case NodeEvent.KvCachesRegistered x -> new NodeEvent.KvCachesRegistered(t, x.configBlockSize(),
                    x.attnBackend(), x.tensors());
            case NodeEvent.ForwardDone x -> new NodeEvent.ForwardDone(t, x.readsPosted(), x.layerWaits(), x.layerWaitNs(),
                    x.lastLayerWaitBeforeNs());
            case NodeEvent.Tick x -> new NodeEvent.Tick(t);
        };
    }
}
