// The operations relay-compiler reads (`npx relay-compiler` writes their artifacts into src/__generated__/). A program
// without Relay's Babel plugin imports those artifacts, as the Babel plugin would put them in place of these tags.
import { graphql } from 'relay-runtime';

export const roster = graphql`
  query soulsRosterQuery($first: Int!, $after: String) {
    soulsConnection(first: $first, after: $after, orderBy: NAME) @connection(key: "souls_soulsConnection") {
      totalCount
      edges {
        node {
          id
          name
          level
        }
      }
    }
  }
`;

export const shards = graphql`
  query soulsShardsQuery($soulId: ID!, $first: Int!, $after: String) {
    soul(id: $soulId) {
      id
      name
      shards(first: $first, after: $after) @connection(key: "souls_shards") {
        totalCount
        edges {
          node {
            id
            content
          }
        }
      }
    }
  }
`;

export const observe = graphql`
  mutation soulsObserveMutation($inputs: [DropShardInput!]!) {
    dropShards(inputs: $inputs) {
      __typename
      ... on DropShardsPayload {
        shards {
          id
        }
        readySouls {
          id
          name
          pendingShardCount
        }
      }
      ... on ValidationError {
        field
      }
      ... on Error {
        message
      }
    }
  }
`;

export const ready = graphql`
  subscription soulsReadySubscription($soulIds: [ID!]) {
    crystallizationReady(soulIds: $soulIds) {
      soul {
        id
        name
        crystallization {
          ready
        }
      }
    }
  }
`;
