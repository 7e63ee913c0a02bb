import {
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
import { shardRowBound, type Settings, type SoulsDb } from '../engine/index.ts';
import type { CostMeter } from './limits-cost.ts';
import type { Limits } from './limits.ts';
import { EVIDENCE_PRICES, FIELD_EXTRAS, FIELD_PRICE, INPUT_ITEM_PRICES, listItems, OBJECT_PRICE, ROSTER_PAGE, SCAN_ROW_PRICE, searchPrice, searchWords } from './price-list.ts';

type ListBound = { limit: number; setting: string };

/**
 * The bound of every list argument and list input field, by schema coordinate
 * (`Type.field(argument:)` or `InputType.field`); lists not named here take maxListItems.
 */
export function listBounds(limits: Limits, bounds: Pick<Settings, 'maxTagsPerShard' | 'maxBatchSize' | 'maxEmbeddingDimension'>): (coordinate: string) => ListBound {
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

/** The settings list bounds depend on. */
type BoundSettings = Pick<Settings, 'traitLimit' | 'maxThemesPerSoul' | 'maxTagsPerShard' | 'maxBatchSize' | 'maxEmbeddingDimension'>;

type Walk = {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  defaults: Map<string, ValueNode>;
  boundOf: (coordinate: string) => ListBound;
  settings: BoundSettings;
  /** The shard rows a scan may read (0 when the document has none). */
  shardRows: number;
  /** Fields charged as they resolve: their own price is left out of the estimate the meter starts from. */
  metered: ReadonlySet<string>;
  fragmentCosts: Map<string, number>;
};

/** What the fields below one field see of it: a mutation's input items (its payload lists are priced by them) and a connection's page arguments. */
type Scope = { inputItems: number; connectionArgs: Readonly<Record<string, unknown>> };

/**
 * Checks every list in a value against its bound (a list given as one value
 * counts as one item) and returns the items of the outermost list, or 0.
 */
function inputListItems(walk: Walk, raw: unknown, type: GraphQLInputType, coordinate: string, path: string): number {
  const nullable = getNullableType(type);
  if (raw === null || raw === undefined) return 0;
  if (isListType(nullable)) {
    const items: unknown[] = Array.isArray(raw) ? raw : [raw];
    const { limit, setting } = walk.boundOf(coordinate);
    if (items.length > limit) {
      throw requestError(`${path} has ${items.length} items; at most ${limit} are allowed (${setting})`, 'LIST_TOO_LONG', { argument: path, limit, setting });
    }
    const itemType = nullable.ofType as GraphQLInputType;
    if (isInputObjectType(getNamedType(itemType))) items.forEach((item, i) => inputListItems(walk, item, itemType, coordinate, `${path}[${i}]`));
    return items.length;
  }
  if (isInputObjectType(nullable) && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const field of Object.values(nullable.getFields())) {
      inputListItems(walk, (raw as Record<string, unknown>)[field.name], field.type, `${nullable.name}.${field.name}`, `${path}.${field.name}`);
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

/** The work a field does beyond its selection, by the price list: reports, verdicts and scans. */
function workPrice(walk: Walk, coordinate: string, args: Readonly<Record<string, unknown>>): number {
  const base = (price: number) => (walk.metered.has(coordinate) ? 0 : price);
  const scan = SCAN_ROW_PRICE * walk.shardRows;
  const extra = FIELD_EXTRAS[coordinate] ?? 0;
  switch (coordinate) {
    case 'Soul.evidence': {
      const query = typeof args.query === 'string' && args.query.trim() !== '' ? args.query : null;
      return extra + base(EVIDENCE_PRICES.reportRead) + (query === null ? 0 : searchPrice(walk.shardRows, searchWords(query)));
    }
    case 'Soul.crystallization':
      return extra + base(EVIDENCE_PRICES.verdict);
    case 'Query.crystallizationReadiness':
      // It judges every awake soul, whatever its page: as many as a roster holds.
      return extra + base(EVIDENCE_PRICES.verdict * ROSTER_PAGE.max);
    case 'Query.searchShards':
      return extra + searchPrice(walk.shardRows, searchWords(args.query));
    case 'Query.shards':
    case 'Query.shardCountsByTag':
      // With a soul, the rows its count reads are charged once it has run (its totalCount).
      return extra + (args.soulId === undefined || args.soulId === null ? scan : 0);
    case 'Query.shardCountsPerSoul':
      return extra + scan;
    default:
      return extra;
  }
}

/** The field's arguments as it will run: given (literal or variable), else the schema's defaults. */
function fieldArgs(walk: Walk, field: FieldNode, definition: { args: readonly { name: string; defaultValue: unknown }[] } | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const arg of definition?.args ?? []) if (arg.defaultValue !== undefined) args[arg.name] = arg.defaultValue;
  for (const arg of field.arguments ?? []) args[arg.name.value] = argumentValue(walk, arg.value);
  return args;
}

function fieldCost(walk: Walk, field: FieldNode, parent: GraphQLNamedType | undefined, scope: Scope): number {
  if (field.name.value === '__schema' || field.name.value === '__type') return 0;
  const definition = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[field.name.value] : undefined;
  if (!definition || !parent) return FIELD_PRICE;
  const coordinate = `${parent.name}.${field.name.value}`;
  const args = fieldArgs(walk, field, definition);
  let inputItems = 0;
  let inputs = 0;
  for (const arg of field.arguments ?? []) {
    const argument = definition.args.find((a) => a.name === arg.name.value);
    if (!argument) continue;
    const at = `${coordinate}(${argument.name}:)`;
    const given = inputListItems(walk, argumentValue(walk, arg.value), argument.type, at, at);
    inputItems += given;
    inputs += given * (INPUT_ITEM_PRICES[at] ?? 1);
  }
  const own = workPrice(walk, coordinate, args);
  const isList = isListType(getNullableType(definition.type));
  const connection = coordinate.endsWith('Connection.edges');
  const items = isList ? listItems(coordinate, connection ? scope.connectionArgs : args, walk.settings, scope.inputItems) : 1;
  if (!field.selectionSet) return own + items * FIELD_PRICE + inputs;
  const type = getNamedType(definition.type);
  const inner: Scope = {
    inputItems: parent === walk.schema.getMutationType() ? inputItems : scope.inputItems,
    connectionArgs: type.name.endsWith('Connection') ? args : scope.connectionArgs,
  };
  return own + items * (OBJECT_PRICE + selectionCost(walk, field.selectionSet, type, inner)) + inputs;
}

/** Fragments are flattened: they cost what their fields would cost written inline. */
function selectionCost(walk: Walk, selectionSet: SelectionSetNode, parent: GraphQLNamedType | undefined, scope: Scope): number {
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      cost += fieldCost(walk, selection, parent, scope);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition ? walk.schema.getType(selection.typeCondition.name.value) : parent;
      cost += selectionCost(walk, selection.selectionSet, type ?? undefined, scope);
    } else {
      const name = selection.name.value;
      const key = `${name}|${scope.inputItems}|${JSON.stringify(scope.connectionArgs.first ?? null)}`;
      let fragmentCost = walk.fragmentCosts.get(key);
      if (fragmentCost === undefined) {
        const fragment = walk.fragments.get(name);
        walk.fragmentCosts.set(key, 0);
        fragmentCost = fragment ? selectionCost(walk, fragment.selectionSet, walk.schema.getType(fragment.typeCondition.name.value) ?? undefined, scope) : 0;
        walk.fragmentCosts.set(key, fragmentCost);
      }
      cost += fragmentCost;
    }
  }
  return cost;
}

export type CostArgs = { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null; variableValues?: Record<string, unknown> | null; contextValue?: unknown };

export type CostInputs = { boundOf: (coordinate: string) => ListBound; settings: BoundSettings; shardRows: number; metered?: ReadonlySet<string> };

/**
 * The price of an operation by the price list (src/server/price-list.ts): each field its price, each list field
 * times the items it may return (nested lists multiply), the work of reports, verdicts and scans, and one per item
 * of every list argument, variables included. Every input list is checked against its bound on the way.
 */
export function operationCost(args: CostArgs, inputs: CostInputs): number {
  const operation: OperationDefinitionNode | null | undefined = getOperationAST(args.document, args.operationName ?? undefined);
  if (!operation) return 0;
  const walk: Walk = {
    schema: args.schema,
    fragments: new Map(args.document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d])),
    variables: args.variableValues ?? {},
    defaults: new Map((operation.variableDefinitions ?? []).flatMap((d) => (d.defaultValue ? [[d.variable.name.value, d.defaultValue] as const] : []))),
    boundOf: inputs.boundOf,
    settings: inputs.settings,
    shardRows: inputs.shardRows,
    metered: inputs.metered ?? new Set(),
    fragmentCosts: new Map(),
  };
  // Nested bounds multiply past what a double holds exactly: a price that large says "too much" all the same.
  return Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(selectionCost(walk, operation.selectionSet, args.schema.getRootType(operation.operation) ?? undefined, { inputItems: 0, connectionArgs: {} })));
}

/** Fields whose work is charged as they resolve: in a query, verdicts too (the request's loaders charge each soul's once). */
const METERED_IN_QUERIES: ReadonlySet<string> = new Set(['Soul.evidence', 'Soul.crystallization', 'Query.crystallizationReadiness']);
const METERED_IN_SUBSCRIPTIONS: ReadonlySet<string> = new Set(['Soul.evidence']);

/** Per parsed document (Yoga caches them): the field names it selects, to know whether a scan or a metered field is in it. */
const namesOf = new WeakMap<DocumentNode, ReadonlySet<string>>();
function fieldNames(document: DocumentNode): ReadonlySet<string> {
  let names = namesOf.get(document);
  if (!names) {
    const found = new Set<string>();
    visit(document, { Field: (node) => void found.add(node.name.value) });
    names = found;
    namesOf.set(document, names);
  }
  return names;
}

const SCANNING = ['searchShards', 'shards', 'shardCountsByTag', 'shardCountsPerSoul', 'evidence'];
const METERED = ['evidence', 'crystallization', 'crystallizationReadiness'];

/**
 * Refuses, before anything runs (variables are not even coerced), an operation priced over its limit or with a list
 * over its bound; a document that searches or counts shards first reads how many rows there are (one statement).
 * It runs at execute and subscribe time because validation results are cached per document, while the variables
 * and the data change from request to request.
 */
export function boundingCost(limits: Limits, db: SoulsDb): Plugin {
  const boundOf = listBounds(limits, db.settings);
  const check = (subscription: boolean) => ({ args, setResultAndStopExecution }: { args: CostArgs; setResultAndStopExecution: (result: { errors: GraphQLError[] }) => void }) => {
    const names = fieldNames(args.document);
    const judge = (shardRows: number) => {
      try {
        const inputs: CostInputs = { boundOf, settings: db.settings, shardRows };
        const cost = operationCost(args, inputs);
        const [limit, setting] = subscription && limits.maxSubscriptionCost < limits.maxCost ? [limits.maxSubscriptionCost, 'maxSubscriptionCost'] : [limits.maxCost, 'maxCost'];
        if (cost > limit) {
          const what = subscription ? 'Subscription' : 'Query';
          throw requestError(`${what} Cost limit of ${limit} exceeded, found ${cost}.`, 'COST_LIMIT', { cost, limit, setting });
        }
        // The meter starts from the estimate without the metered fields' own prices, so they are not counted twice.
        const metered = subscription ? METERED_IN_SUBSCRIPTIONS : METERED_IN_QUERIES;
        const meter = (args.contextValue as { cost?: CostMeter } | undefined)?.cost;
        meter?.begin(METERED.some((n) => names.has(n)) ? operationCost(args, { ...inputs, metered }) : cost, limit, setting);
      } catch (error) {
        if (!(error instanceof GraphQLError)) throw error;
        setResultAndStopExecution({ errors: [error] });
      }
    };
    if (!SCANNING.some((n) => names.has(n))) return judge(0);
    return Promise.resolve(shardRowBound(db)).then(judge);
  };
  return { onExecute: check(false), onSubscribe: check(true) };
}
