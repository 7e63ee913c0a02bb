/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
export type AddTraitInput = {
  /** shards to cite as evidence, in the same write */
  citeShardIds?: Array<string> | null | undefined;
  principle: string;
  /** how the trait was earned: no provenance, no trait */
  provenance: string;
};

export type AlignmentKind =
  | 'CONTRADICTING'
  | 'NOVEL'
  | 'REINFORCING';

export type CreateSoulInput = {
  /** a short summary for listings and cards */
  description?: string | null | undefined;
  /** the narrative identity core, as prose */
  essence: string;
  name: string;
  slug?: string | null | undefined;
};

export type CrystallizationCondition =
  | 'AGE_SPREAD'
  | 'DORMANT'
  | 'MIN_CLUSTERS'
  | 'MIN_SHARDS'
  | 'RECENCY'
  | 'SOURCE_DIVERSITY';

export type DropShardInput = {
  content: string;
  /** historical import; may not be in the future */
  createdAt?: string | null | undefined;
  /** your embedding of the content, for similarity PROVIDED: finite numbers, not all zeros, at most maxEmbeddingDimension (4096) of them; the first one stored fixes the dimension of this database. Stored L2-normalized. */
  embedding?: Array<number> | null | undefined;
  sealed?: boolean | null | undefined;
  soulIds: Array<string>;
  /** the evidence channel, e.g. delegation, manual_review, reader_feedback */
  source: string;
  tags?: Array<string> | null | undefined;
};

export type LevelChangeKind =
  | 'LEVEL_UP'
  | 'REVERT';

export type SuggestedActionKind =
  | 'AT_CAPACITY'
  | 'CONSOLIDATION_CANDIDATES'
  | 'ESSENCE_REDUNDANT'
  | 'NEW_THEME'
  | 'NOVEL_CLUSTER'
  | 'NO_CLUSTER_SIGNAL'
  | 'POSSIBLE_COUNTER_EVIDENCE'
  | 'PROMOTION_CANDIDATES'
  | 'READY_FOR_REFINEMENT'
  | 'STALE_TRAITS'
  | 'TENSION';

export type DashboardQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardQuery = { souls: Array<{ id: string, name: string, level: number, activeTraitCount: number, traitLimit: number, pendingShardCount: number, health: number, traits: Array<{ id: string, principle: string, signals: { citationCount: number, stale: boolean } }>, crystallization: { ready: boolean, priority: number, unmet: Array<CrystallizationCondition> }, evidence: { clusterCount: number, clusters: Array<{ weight: number, memberCount: number, representative: { content: string }, alignment: { kind: AlignmentKind } }>, suggestedActions: Array<{ kind: SuggestedActionKind, message: string, count: number }> } }> };

export type NpcCrystallizationReadySubscriptionVariables = Exact<{
  soulIds?: Array<string> | string | null | undefined;
}>;


export type NpcCrystallizationReadySubscription = { crystallizationReady: { at: string, priority: number, soul: { id: string, name: string, crystallization: { pendingCount: number, distinctSources: number, ageSpreadDays: number } } } };

export type NpcLevelChangedSubscriptionVariables = Exact<{
  soulId?: string | null | undefined;
}>;


export type NpcLevelChangedSubscription = { levelChanged: { at: string, kind: LevelChangeKind, soul: { id: string, name: string, level: number }, event: { id: string, level: number, essenceBefore: string, essenceAfter: string } } };

export type RefineReadinessQueryVariables = Exact<{ [key: string]: never; }>;


export type RefineReadinessQuery = { crystallizationReadiness: Array<{ priority: number, soul: { id: string, name: string } }> };

export type RefineEvidenceQueryVariables = Exact<{
  soulId: string;
}>;


export type RefineEvidenceQuery = { soul: { id: string, name: string, activeTraitCount: number, traitLimit: number, rendered: string, evidence: { shardCount: number, clusters: Array<{ weight: number, memberCount: number, sources: Array<string>, ageSpanDays: number, representative: { id: string, content: string }, members: Array<{ id: string, content: string }>, alignment: { kind: AlignmentKind, trait: { principle: string } | null } }>, suggestedActions: Array<{ kind: SuggestedActionKind, message: string }> } } | null };

export type RefineAddTraitMutationVariables = Exact<{
  soulId: string;
  input: AddTraitInput;
}>;


export type RefineAddTraitMutation = { addTrait:
    | { __typename: 'CapacityError', activeCount: number, limit: number, message: string }
    | { __typename: 'InvalidStateError', message: string }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'TraitPayload', trait: { id: string, principle: string, provenance: string, citations: Array<{ id: string }> }, soul: { activeTraitCount: number, traitLimit: number } }
    | { __typename: 'ValidationError', field: string, message: string }
   };

export type RefineStampAttunedMutationVariables = Exact<{
  soulId: string;
}>;


export type RefineStampAttunedMutation = { stampAttuned:
    | { __typename: 'ConflictError', message: string }
    | { __typename: 'InvalidStateError', message: string }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'SoulPayload', soul: { lastAttunedAt: string | null, rendered: string, crystallization: { ready: boolean } } }
    | { __typename: 'ValidationError', message: string }
   };

export type SeedSoulByNameQueryVariables = Exact<{
  name: string;
}>;


export type SeedSoulByNameQuery = { soulByName: { id: string, name: string, dormant: boolean } | null };

export type SeedCreateSoulMutationVariables = Exact<{
  input: CreateSoulInput;
}>;


export type SeedCreateSoulMutation = { createSoul:
    | { __typename: 'ConflictError', message: string }
    | { __typename: 'InvalidStateError', message: string }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'SoulPayload', soul: { id: string, name: string } }
    | { __typename: 'ValidationError', message: string }
   };

export type SeedDropShardsMutationVariables = Exact<{
  inputs: Array<DropShardInput> | DropShardInput;
}>;


export type SeedDropShardsMutation = { dropShards:
    | { __typename: 'DropShardsPayload', shards: Array<{ id: string }>, readySouls: Array<{ id: string, name: string }> }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'ValidationError', field: string, message: string }
   };

export type SeedAddTraitMutationVariables = Exact<{
  soulId: string;
  input: AddTraitInput;
}>;


export type SeedAddTraitMutation = { addTrait:
    | { __typename: 'CapacityError', message: string }
    | { __typename: 'InvalidStateError', message: string }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'TraitPayload', trait: { id: string } }
    | { __typename: 'ValidationError', message: string }
   };

export type SeedSummaryQueryVariables = Exact<{ [key: string]: never; }>;


export type SeedSummaryQuery = { souls: Array<{ id: string, name: string, activeTraitCount: number, pendingShardCount: number, crystallization: { ready: boolean, priority: number, unmet: Array<CrystallizationCondition> } }> };

export type TypedClientCreateSoulMutationVariables = Exact<{
  input: CreateSoulInput;
}>;


export type TypedClientCreateSoulMutation = { createSoul:
    | { __typename: 'ConflictError', field: string, message: string }
    | { __typename: 'InvalidStateError', message: string }
    | { __typename: 'NotFoundError', message: string }
    | { __typename: 'SoulPayload', soul: { id: string, name: string, slug: string | null, level: number } }
    | { __typename: 'ValidationError', field: string, message: string }
   };

export type TypedClientSoulByNameQueryVariables = Exact<{
  name: string;
}>;


export type TypedClientSoulByNameQuery = { soulByName: { id: string, name: string, slug: string | null, level: number } | null };

export type TypedClientDropShardsMutationVariables = Exact<{
  inputs: Array<DropShardInput> | DropShardInput;
}>;


export type TypedClientDropShardsMutation = { dropShards:
    | { __typename: 'DropShardsPayload', shards: Array<{ id: string, source: string, content: string, tags: Array<string>, createdAt: string }>, readySouls: Array<{ id: string, name: string }> }
    | { __typename: 'NotFoundError', entity: string, id: string, message: string }
    | { __typename: 'ValidationError', field: string, message: string }
   };

export type TypedClientSoulCardQueryVariables = Exact<{
  id: string;
}>;


export type TypedClientSoulCardQuery = { soul: { name: string, pendingShardCount: number, rendered: string, crystallization: { ready: boolean, unmet: Array<CrystallizationCondition> } } | null };


export const DashboardDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Dashboard"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"souls"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"orderBy"},"value":{"kind":"EnumValue","value":"READINESS"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"level"}},{"kind":"Field","name":{"kind":"Name","value":"activeTraitCount"}},{"kind":"Field","name":{"kind":"Name","value":"traitLimit"}},{"kind":"Field","name":{"kind":"Name","value":"pendingShardCount"}},{"kind":"Field","name":{"kind":"Name","value":"health"}},{"kind":"Field","name":{"kind":"Name","value":"traits"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"principle"}},{"kind":"Field","name":{"kind":"Name","value":"signals"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"citationCount"}},{"kind":"Field","name":{"kind":"Name","value":"stale"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"crystallization"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"ready"}},{"kind":"Field","name":{"kind":"Name","value":"priority"}},{"kind":"Field","name":{"kind":"Name","value":"unmet"}}]}},{"kind":"Field","name":{"kind":"Name","value":"evidence"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"clusterCount"}},{"kind":"Field","name":{"kind":"Name","value":"clusters"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"weight"}},{"kind":"Field","name":{"kind":"Name","value":"memberCount"}},{"kind":"Field","name":{"kind":"Name","value":"representative"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"content"}}]}},{"kind":"Field","name":{"kind":"Name","value":"alignment"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"suggestedActions"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"message"}},{"kind":"Field","name":{"kind":"Name","value":"count"}}]}}]}}]}}]}}]} as unknown as DocumentNode<DashboardQuery, DashboardQueryVariables>;
export const NpcCrystallizationReadyDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"NpcCrystallizationReady"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulIds"}},"type":{"kind":"ListType","type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"crystallizationReady"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"soulIds"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulIds"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"at"}},{"kind":"Field","name":{"kind":"Name","value":"priority"}},{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"crystallization"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"pendingCount"}},{"kind":"Field","name":{"kind":"Name","value":"distinctSources"}},{"kind":"Field","name":{"kind":"Name","value":"ageSpreadDays"}}]}}]}}]}}]}}]} as unknown as DocumentNode<NpcCrystallizationReadySubscription, NpcCrystallizationReadySubscriptionVariables>;
export const NpcLevelChangedDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"NpcLevelChanged"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"levelChanged"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"soulId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"at"}},{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"level"}}]}},{"kind":"Field","name":{"kind":"Name","value":"event"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"level"}},{"kind":"Field","name":{"kind":"Name","value":"essenceBefore"}},{"kind":"Field","name":{"kind":"Name","value":"essenceAfter"}}]}}]}}]}}]} as unknown as DocumentNode<NpcLevelChangedSubscription, NpcLevelChangedSubscriptionVariables>;
export const RefineReadinessDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"RefineReadiness"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"crystallizationReadiness"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"priority"}},{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}}]}}]} as unknown as DocumentNode<RefineReadinessQuery, RefineReadinessQueryVariables>;
export const RefineEvidenceDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"RefineEvidence"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soul"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"activeTraitCount"}},{"kind":"Field","name":{"kind":"Name","value":"traitLimit"}},{"kind":"Field","name":{"kind":"Name","value":"rendered"}},{"kind":"Field","name":{"kind":"Name","value":"evidence"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"shardCount"}},{"kind":"Field","name":{"kind":"Name","value":"clusters"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"weight"}},{"kind":"Field","name":{"kind":"Name","value":"memberCount"}},{"kind":"Field","name":{"kind":"Name","value":"sources"}},{"kind":"Field","name":{"kind":"Name","value":"ageSpanDays"}},{"kind":"Field","name":{"kind":"Name","value":"representative"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"content"}}]}},{"kind":"Field","name":{"kind":"Name","value":"members"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"content"}}]}},{"kind":"Field","name":{"kind":"Name","value":"alignment"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"trait"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"principle"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"suggestedActions"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]}}]} as unknown as DocumentNode<RefineEvidenceQuery, RefineEvidenceQueryVariables>;
export const RefineAddTraitDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"RefineAddTrait"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"AddTraitInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"addTrait"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"soulId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}}},{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"TraitPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"trait"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"principle"}},{"kind":"Field","name":{"kind":"Name","value":"provenance"}},{"kind":"Field","name":{"kind":"Name","value":"citations"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"activeTraitCount"}},{"kind":"Field","name":{"kind":"Name","value":"traitLimit"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"CapacityError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"activeCount"}},{"kind":"Field","name":{"kind":"Name","value":"limit"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ValidationError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"field"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"NotFoundError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"InvalidStateError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<RefineAddTraitMutation, RefineAddTraitMutationVariables>;
export const RefineStampAttunedDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"RefineStampAttuned"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"stampAttuned"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"soulId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"SoulPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"lastAttunedAt"}},{"kind":"Field","name":{"kind":"Name","value":"rendered"}},{"kind":"Field","name":{"kind":"Name","value":"crystallization"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"ready"}}]}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Error"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<RefineStampAttunedMutation, RefineStampAttunedMutationVariables>;
export const SeedSoulByNameDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"SeedSoulByName"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"name"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soulByName"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"name"},"value":{"kind":"Variable","name":{"kind":"Name","value":"name"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"dormant"}}]}}]}}]} as unknown as DocumentNode<SeedSoulByNameQuery, SeedSoulByNameQueryVariables>;
export const SeedCreateSoulDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"SeedCreateSoul"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"CreateSoulInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createSoul"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"SoulPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Error"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<SeedCreateSoulMutation, SeedCreateSoulMutationVariables>;
export const SeedDropShardsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"SeedDropShards"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"inputs"}},"type":{"kind":"NonNullType","type":{"kind":"ListType","type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"DropShardInput"}}}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"dropShards"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"inputs"},"value":{"kind":"Variable","name":{"kind":"Name","value":"inputs"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"DropShardsPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"shards"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}}]}},{"kind":"Field","name":{"kind":"Name","value":"readySouls"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ValidationError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"field"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"NotFoundError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<SeedDropShardsMutation, SeedDropShardsMutationVariables>;
export const SeedAddTraitDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"SeedAddTrait"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"AddTraitInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"addTrait"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"soulId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"soulId"}}},{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"TraitPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"trait"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Error"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<SeedAddTraitMutation, SeedAddTraitMutationVariables>;
export const SeedSummaryDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"SeedSummary"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"souls"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"orderBy"},"value":{"kind":"EnumValue","value":"NAME"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"activeTraitCount"}},{"kind":"Field","name":{"kind":"Name","value":"pendingShardCount"}},{"kind":"Field","name":{"kind":"Name","value":"crystallization"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"ready"}},{"kind":"Field","name":{"kind":"Name","value":"priority"}},{"kind":"Field","name":{"kind":"Name","value":"unmet"}}]}}]}}]}}]} as unknown as DocumentNode<SeedSummaryQuery, SeedSummaryQueryVariables>;
export const TypedClientCreateSoulDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"TypedClientCreateSoul"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"CreateSoulInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createSoul"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"SoulPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soul"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"slug"}},{"kind":"Field","name":{"kind":"Name","value":"level"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ConflictError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"field"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ValidationError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"field"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Error"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<TypedClientCreateSoulMutation, TypedClientCreateSoulMutationVariables>;
export const TypedClientSoulByNameDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"TypedClientSoulByName"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"name"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soulByName"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"name"},"value":{"kind":"Variable","name":{"kind":"Name","value":"name"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"slug"}},{"kind":"Field","name":{"kind":"Name","value":"level"}}]}}]}}]} as unknown as DocumentNode<TypedClientSoulByNameQuery, TypedClientSoulByNameQueryVariables>;
export const TypedClientDropShardsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"TypedClientDropShards"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"inputs"}},"type":{"kind":"NonNullType","type":{"kind":"ListType","type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"DropShardInput"}}}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"dropShards"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"inputs"},"value":{"kind":"Variable","name":{"kind":"Name","value":"inputs"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"DropShardsPayload"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"shards"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"source"}},{"kind":"Field","name":{"kind":"Name","value":"content"}},{"kind":"Field","name":{"kind":"Name","value":"tags"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}}]}},{"kind":"Field","name":{"kind":"Name","value":"readySouls"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ValidationError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"field"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"NotFoundError"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"entity"}},{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<TypedClientDropShardsMutation, TypedClientDropShardsMutationVariables>;
export const TypedClientSoulCardDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"TypedClientSoulCard"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"id"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"soul"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"id"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"pendingShardCount"}},{"kind":"Field","name":{"kind":"Name","value":"crystallization"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"ready"}},{"kind":"Field","name":{"kind":"Name","value":"unmet"}}]}},{"kind":"Field","name":{"kind":"Name","value":"rendered"}}]}}]}}]} as unknown as DocumentNode<TypedClientSoulCardQuery, TypedClientSoulCardQueryVariables>;