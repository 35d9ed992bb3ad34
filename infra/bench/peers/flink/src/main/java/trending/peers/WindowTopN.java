package trending.peers;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

/**
 * The Flink side of `make bench-peers`: the Window Top-N a Flink user writes for "the top K
 * items of the last hour, sliding every minute" (Flink SQL docs, "Window Top-N"), over the
 * views topic as it is when the job starts (bounded: it ends when the topic is consumed), in
 * local execution with the heap state backend. Writes window_end,rank,item,count as CSV.
 *
 * usage: WindowTopN BOOTSTRAP TOPIC GROUP PARALLELISM K LATENESS_SECONDS OUT.csv
 */
public final class WindowTopN {
  public static void main(String[] args) throws Exception {
    if (args.length != 7) {
      System.err.println("usage: WindowTopN BOOTSTRAP TOPIC GROUP PARALLELISM K LATENESS_SECONDS OUT.csv");
      System.exit(2);
    }
    String bootstrap = args[0], topic = args[1], group = args[2];
    int parallelism = Integer.parseInt(args[3]);
    int k = Integer.parseInt(args[4]);
    int lateness = Integer.parseInt(args[5]);
    Path out = Path.of(args[6]);

    Configuration conf = new Configuration();
    conf.set(CoreOptions.DEFAULT_PARALLELISM, parallelism);
    conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
    conf.setString("table.local-time-zone", "UTC");
    TableEnvironment env = TableEnvironment.create(
        EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());

    // One view event (schemas/event.schema.json): pre-summed, so a count per message; the
    // writer (model/event.AppendJSON) puts ts as RFC 3339 UTC with milliseconds. region,
    // user_id and account_age_days are not read.
    env.executeSql(
        "CREATE TABLE view_events (\n"
            + "  item_id STRING,\n"
            + "  `count` BIGINT,\n"
            + "  ts TIMESTAMP_LTZ(3),\n"
            + "  WATERMARK FOR ts AS ts - INTERVAL '" + lateness + "' SECOND\n"
            + ") WITH (\n"
            + "  'connector' = 'kafka',\n"
            + "  'topic' = '" + topic + "',\n"
            + "  'properties.bootstrap.servers' = '" + bootstrap + "',\n"
            + "  'properties.group.id' = '" + group + "',\n"
            + "  'scan.startup.mode' = 'earliest-offset',\n"
            + "  'scan.bounded.mode' = 'latest-offset',\n"
            + "  'format' = 'json',\n"
            + "  'json.timestamp-format.standard' = 'ISO-8601'\n"
            + ")");

    // The Window Top-N of the Flink documentation: a windowing TVF (HOP: one hour, sliding
    // every minute), an aggregation per window and item, ROW_NUMBER per window. The item id
    // orders ties as trending does (count desc, item asc), so the two lists can be compared.
    String query =
        "SELECT window_end, rn, item_id, cnt FROM (\n"
            + "  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end\n"
            + "                               ORDER BY cnt DESC, item_id ASC) AS rn\n"
            + "  FROM (\n"
            + "    SELECT window_start, window_end, item_id, SUM(`count`) AS cnt\n"
            + "    FROM TABLE(HOP(TABLE view_events, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))\n"
            + "    GROUP BY window_start, window_end, item_id\n"
            + "  )\n"
            + ") WHERE rn <= " + k;
    System.err.println(env.explainSql(query));

    long rows = 0;
    TableResult result = env.executeSql(query);
    try (CloseableIterator<Row> it = result.collect();
        BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
      w.write("window_end,rank,item,count\n");
      while (it.hasNext()) {
        Row r = it.next();
        w.write(utc(r.getField(0)) + "," + r.getField(1) + "," + r.getField(2) + "," + r.getField(3) + "\n");
        rows++;
      }
    }
    System.err.println("flink-peer: " + rows + " rows to " + out);
  }

  // window_end is a TIMESTAMP_LTZ (an Instant) for a TIMESTAMP_LTZ time attribute; written
  // as RFC 3339 UTC either way.
  private static String utc(Object t) throws IOException {
    if (t instanceof Instant i) {
      return i.toString();
    }
    if (t instanceof LocalDateTime l) {
      return l.toInstant(ZoneOffset.UTC).toString();
    }
    throw new IOException("window_end of type " + (t == null ? "null" : t.getClass()));
  }
}
