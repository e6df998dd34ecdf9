// The log4j configuration of the local stack's broker and Connect (one file, read by both JVMs).

/** The properties, one per line. */
export function log4jProperties(): string {
  return [
    'log4j.rootLogger=INFO, stdout',
    'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
    'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
    // %X{connector.context}: which connector or task a line is about ("[outbox.t….p…|task-0] "),
    // as in Kafka's own connect-log4j.properties; Debezium's lines do not say it themselves
    'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %X{connector.context}%m (%c)%n',
    'log4j.logger.org.apache.kafka=WARN',
    'log4j.logger.kafka=WARN',
    'log4j.logger.org.apache.kafka.connect.runtime.rest=WARN',
    'log4j.logger.io.debezium=INFO',
    'log4j.logger.org.reflections=ERROR',
    // six "Type [...] is already mapped" lines (information_schema's domains) at every task start,
    // so at every wake of an idle project: Debezium's type cache, not a fault (DBZ-8519;
    // docs/operations.md, "The local stack")
    'log4j.logger.io.debezium.connector.postgresql.TypeRegistry=ERROR',
  ].join('\n') + '\n';
}
