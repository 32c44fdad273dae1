"""The data model. Importing this package registers every table on ``Base.metadata``."""

from paperclip.db.base import Base
from paperclip.models.activity import ActivityEntry
from paperclip.models.agent import Agent, AgentStatus
from paperclip.models.api_key import ROLE_RANK, ApiKey, KeyRole
from paperclip.models.comment import Comment
from paperclip.models.company import Company
from paperclip.models.conversation import (
    Conversation,
    ConversationMessage,
    ConversationState,
    ConversationTurnRecord,
)
from paperclip.models.cost import (
    Budget,
    BudgetMonth,
    BudgetScope,
    CostEvent,
    CostSource,
    ModelPrice,
    RunReservation,
)
from paperclip.models.hold import HoldSetter, HoldStatus, TaskHold
from paperclip.models.interaction import (
    CARD_KINDS,
    HOLDING_STATUSES,
    Interaction,
    InteractionKind,
    InteractionStatus,
)
from paperclip.models.issue import Issue, IssuePriority, IssueStatus
from paperclip.models.project import DEFAULT_BRANCH_PREFIX, DEFAULT_MERGE_STRATEGY, Project
from paperclip.models.recovery import (
    ControllerBoot,
    RecoveryItem,
    RecoveryItemStatus,
    RecoverySettlement,
)
from paperclip.models.routine import (
    CatchUp,
    Concurrency,
    ExecutionStatus,
    Routine,
    RoutineExecution,
    Trigger,
)
from paperclip.models.run import ACTIVE_RUN_STATUSES, Run, RunEvent, RunStatus
from paperclip.models.runner import Runner, RunnerMessage, RunToken
from paperclip.models.server_secret import ServerSecret
from paperclip.models.steer import RunSteer  # steering (seed 004)
from paperclip.models.tool_call import ToolCall, ToolCallStatus, ToolReceipt
from paperclip.models.turn import RunTurn, TurnKind, TurnStatus
from paperclip.models.wake import WakeKey, WakeRequest, WakeStatus
from paperclip.models.wake_snapshot import WakeCommentRead, WakeCommentSnapshot, WakeSnapshotComment
from paperclip.models.workspace import IssueWorkspace, WorkspaceStatus
from paperclip.models.workspace_merge import MergeStatus, WorkspaceMerge

__all__ = [
    "ACTIVE_RUN_STATUSES",
    "CARD_KINDS",
    "DEFAULT_BRANCH_PREFIX",
    "DEFAULT_MERGE_STRATEGY",
    "HOLDING_STATUSES",
    "ROLE_RANK",
    "ActivityEntry",
    "Agent",
    "AgentStatus",
    "ApiKey",
    "Base",
    "Budget",
    "BudgetMonth",
    "BudgetScope",
    "CatchUp",
    "Comment",
    "Company",
    "Concurrency",
    "ControllerBoot",
    "Conversation",
    "ConversationMessage",
    "ConversationState",
    "ConversationTurnRecord",
    "CostEvent",
    "CostSource",
    "ExecutionStatus",
    "HoldSetter",
    "HoldStatus",
    "Interaction",
    "InteractionKind",
    "InteractionStatus",
    "Issue",
    "IssuePriority",
    "IssueStatus",
    "IssueWorkspace",
    "KeyRole",
    "MergeStatus",
    "ModelPrice",
    "Project",
    "RecoveryItem",
    "RecoveryItemStatus",
    "RecoverySettlement",
    "Routine",
    "RoutineExecution",
    "Run",
    "RunEvent",
    "RunReservation",
    "RunStatus",
    "RunSteer",
    "RunToken",
    "RunTurn",
    "Runner",
    "RunnerMessage",
    "ServerSecret",
    "TaskHold",
    "ToolCall",
    "ToolCallStatus",
    "ToolReceipt",
    "Trigger",
    "TurnKind",
    "TurnStatus",
    "WakeCommentRead",
    "WakeCommentSnapshot",
    "WakeKey",
    "WakeRequest",
    "WakeSnapshotComment",
    "WakeStatus",
    "WorkspaceMerge",
    "WorkspaceStatus",
]
