import { expensiveFieldCosts, type CostMeter } from './limits-cost.ts';
import {
  BREAK,
  getNamedType,
  getNullableType,
  getOperationAST,
  GraphQLError,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  valueFromASTUntyped,
  visit,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Bounds } from '../engine/index.ts';
import type { Limits } from './limits.ts';

/** graphql-armor's weights, kept so costs read the same as before variables were counted. */
const OBJECT_COST = 2;
const SCALAR_COST = 1;
const DEPTH_COST_FACTOR = 1.5;

/**
 * What a field costs beyond armor's flat rate, for the fields whose work does
 * not show in the selection: an evidence report clusters every shard of the
 * soul, crystallization may cluster them too, a rendered block reads every
 * active trait.
 */
export const fieldCosts: Readonly<Record<string, number>> = {
  'Soul.evidence': 1000,
  'Soul.crystallization': 50,
  'Query.crystallizationReadiness': 50,
  'Soul.rendered': 10,
};

type ListBound = { limit: number; setting: string };

/**
 * The bound of every list argument and list input field, by schema coordinate
 * (`Type.field(argument:)` or `InputType.field`); lists not named here take maxListItems.
 */
export function listBounds(limits: Limits, bounds: Pick<Bounds, 'maxTagsPerShard' | 'maxBatchSize' | 'maxEmbeddingDimension'>): (coordinate: string) => ListBound {
  const filterTags = { limit: limits.maxFilterTags, setting: 'maxFilterTags' };
  const batch = { limit: bounds.maxBatchSize, setting: 'maxBatchSize' };
  const named: Record<string, ListBound> = {
    'Query.shards(tags:)': filterTags,
    'Soul.shards(tags:)': filterTags,
    'Soul.evidence(tags:)': filterTags,
    'DropShardInput.tags': { limit: bounds.maxTagsPerShard, setting: 'maxTagsPerShard' },
    'DropShardInput.embedding': { limit: bounds.maxEmbeddingDimension, setting: 'maxEmbeddingDimension' },
    'Mutation.dropShards(inputs:)': batch,
    'Mutation.revealShards(ids:)': batch,
    'Mutation.assignThemes(assignments:)': batch,
    'ThemeAssignmentInput.shardIds': batch,
    'Mutation.unassignShards(shardIds:)': batch,
  };
  const other = { limit: limits.maxListItems, setting: 'maxListItems' };
  return (coordinate) => named[coordinate] ?? other;
}

/** Refused before execution: a request error (HTTP 400 under application/graphql-response+json), never data. */
function requestError(message: string, code: string, extensions: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extensions, http: { status: 400, spec: true } } });
}

type Walk = {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  defaults: Map<string, ValueNode>;
  boundOf: (coordinate: string) => ListBound;
  fragmentCosts: Map<string, number>;
  weights: Readonly<Record<string, number>>;
};

/**
 * Checks every list in a value against its bound (a list given as one value
 * counts as one item) and returns the items of the outermost list, or 0.
 */
function listItems(walk: Walk, raw: unknown, type: GraphQLInputType, coordinate: string, path: string): number {
  const nullable = getNullableType(type);
  if (raw === null || raw === undefined) return 0;
  if (isListType(nullable)) {
    const items: unknown[] = Array.isArray(raw) ? raw : [raw];
    const { limit, setting } = walk.boundOf(coordinate);
    if (items.length > limit) {
      throw requestError(`${path} has ${items.length} items; at most ${limit} are allowed (${setting})`, 'LIST_TOO_LONG', { argument: path, limit, setting });
    }
    const itemType = nullable.ofType as GraphQLInputType;
    if (isInputObjectType(getNamedType(itemType))) items.forEach((item, i) => listItems(walk, item, itemType, coordinate, `${path}[${i}]`));
    return items.length;
  }
  if (isInputObjectType(nullable) && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const field of Object.values(nullable.getFields())) {
      listItems(walk, (raw as Record<string, unknown>)[field.name], field.type, `${nullable.name}.${field.name}`, `${path}.${field.name}`);
    }
  }
  return 0;
}

function argumentValue(walk: Walk, node: ValueNode): unknown {
  if (node.kind === Kind.VARIABLE) {
    const name = node.name.value;
    if (Object.hasOwn(walk.variables, name)) return walk.variables[name];
    const fallback = walk.defaults.get(name);
    return fallback ? valueFromASTUntyped(fallback) : undefined;
  }
  return valueFromASTUntyped(node, walk.variables);
}

/** The page size a `first` or `last` argument asks for, literal or variable: it multiplies the field's cost. */
function pageSize(walk: Walk, field: FieldNode): number {
  const page = field.arguments?.find((arg) => arg.name.value === 'first' || arg.name.value === 'last');
  if (!page) return 1;
  const value = argumentValue(walk, page.value);
  return typeof value === 'number' && Number.isInteger(value) ? Math.max(value, 1) : 1;
}

function fieldCost(walk: Walk, field: FieldNode, parent: GraphQLNamedType | undefined): number {
  if (field.name.value === '__schema') return 0;
  const definition = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[field.name.value] : undefined;
  let items = 0;
  for (const arg of field.arguments ?? []) {
    const argument = definition?.args.find((a) => a.name === arg.name.value);
    if (!argument) continue;
    const coordinate = `${parent!.name}.${field.name.value}(${argument.name}:)`;
    items += listItems(walk, argumentValue(walk, arg.value), argument.type, coordinate, coordinate);
  }
  const own = (parent && walk.weights[`${parent.name}.${field.name.value}`]) ?? 0;
  if (!field.selectionSet) return SCALAR_COST + own + items;
  const children = selectionCost(walk, field.selectionSet, definition ? getNamedType(definition.type) : undefined, DEPTH_COST_FACTOR);
  return (OBJECT_COST + own + children) * pageSize(walk, field) + items;
}

/** Fragments are flattened: they cost what their fields would cost written inline. */
function selectionCost(walk: Walk, selectionSet: SelectionSetNode, parent: GraphQLNamedType | undefined, factor: number): number {
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      cost += factor * fieldCost(walk, selection, parent);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition ? walk.schema.getType(selection.typeCondition.name.value) : parent;
      cost += selectionCost(walk, selection.selectionSet, type, factor);
    } else {
      const name = selection.name.value;
      let fragmentCost = walk.fragmentCosts.get(name);
      if (fragmentCost === undefined) {
        const fragment = walk.fragments.get(name);
        walk.fragmentCosts.set(name, 0);
        fragmentCost = fragment ? selectionCost(walk, fragment.selectionSet, walk.schema.getType(fragment.typeCondition.name.value), 1) : 0;
        walk.fragmentCosts.set(name, fragmentCost);
      }
      cost += factor * fragmentCost;
    }
  }
  return cost;
}

export type CostArgs = { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null; variableValues?: Record<string, unknown> | null; contextValue?: unknown };

/**
 * The cost of an operation by graphql-armor's rules (objects 2, scalars 1,
 * × 1.5 a level, × first/last), counting what armor cannot see: `first` given
 * as a variable, and one more per item of every list argument, variables
 * included. Every list is checked against its bound on the way.
 */
export function operationCost(args: CostArgs, boundOf: (coordinate: string) => ListBound, weights: Readonly<Record<string, number>> = fieldCosts): number {
  const operation: OperationDefinitionNode | null | undefined = getOperationAST(args.document, args.operationName ?? undefined);
  if (!operation) return 0;
  const walk: Walk = {
    schema: args.schema,
    fragments: new Map(args.document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d])),
    variables: args.variableValues ?? {},
    defaults: new Map((operation.variableDefinitions ?? []).flatMap((d) => (d.defaultValue ? [[d.variable.name.value, d.defaultValue] as const] : []))),
    boundOf,
    fragmentCosts: new Map(),
    weights,
  };
  return selectionCost(walk, operation.selectionSet, args.schema.getRootType(operation.operation) ?? undefined, 1);
}

const meteredFields = Object.keys(expensiveFieldCosts).map((field) => `Soul.${field}`);
const unmeteredWeights = Object.fromEntries(Object.entries(fieldCosts).filter(([coordinate]) => !meteredFields.includes(coordinate)));
const meteredNames = new Set(Object.keys(expensiveFieldCosts));

/** Whether any field of the document is named like a metered one (per parsed document, which Yoga caches). */
const namesMetered = new WeakMap<DocumentNode, boolean>();
function mentionsMetered(document: DocumentNode): boolean {
  let found = namesMetered.get(document);
  if (found === undefined) {
    found = false;
    visit(document, {
      Field(node) {
        if (meteredNames.has(node.name.value)) {
          found = true;
          return BREAK;
        }
      },
    });
    namesMetered.set(document, found);
  }
  return found;
}

/**
 * Refuses, before anything runs (variables are not even coerced), an
 * operation over maxCost or with a list over its bound. It runs at execute
 * and subscribe time because validation results are cached per document,
 * while the variables change from request to request.
 */
export function boundingCost(limits: Limits, bounds: Pick<Bounds, 'maxTagsPerShard' | 'maxBatchSize' | 'maxEmbeddingDimension'>): Plugin {
  const boundOf = listBounds(limits, bounds);
  const check = (subscription: boolean) => ({ args, setResultAndStopExecution }: { args: CostArgs; setResultAndStopExecution: (result: { errors: GraphQLError[] }) => void }) => {
    try {
      const cost = operationCost(args, boundOf);
      // Evidence and crystallization are charged as they resolve (a list's length is known only then): the meter
      // starts from the estimate without their weights, so they are not counted twice.
      const meter = (args.contextValue as { cost?: CostMeter } | undefined)?.cost;
      // Without a metered field in the document both estimates are the same: one walk.
      meter?.estimated(mentionsMetered(args.document) ? operationCost(args, boundOf, unmeteredWeights) : cost);
      const [limit, setting] = subscription && limits.maxSubscriptionCost < limits.maxCost ? [limits.maxSubscriptionCost, 'maxSubscriptionCost'] : [limits.maxCost, 'maxCost'];
      if (cost > limit) {
        const what = subscription ? 'Subscription' : 'Query';
        throw requestError(`${what} Cost limit of ${limit} exceeded, found ${cost}.`, 'COST_LIMIT', { cost, limit, setting });
      }
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      setResultAndStopExecution({ errors: [error] });
    }
  };
  return { onExecute: check(false), onSubscribe: check(true) };
}
