/** A node of the graph */
type CreateEntitiesEntity = {
  name: string;
  entityType: string;
  observations: string[];
};
type CreateEntitiesInput = {
  entities: CreateEntitiesEntity[];
};
/** Create multiple new entities in the knowledge graph */
declare function create_entities(args: CreateEntitiesInput): Promise<unknown>;
