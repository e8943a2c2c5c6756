package ferry.local;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.MetaStoreEventListener;
import org.apache.hadoop.hive.metastore.MetaStoreEventListenerConstants;
import org.apache.hadoop.hive.metastore.RawStore;
import org.apache.hadoop.hive.metastore.ReplChangeManager;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.events.AddPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterTableEvent;
import org.apache.hadoop.hive.metastore.events.ConfigChangeEvent;
import org.apache.hadoop.hive.metastore.events.CreateDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.CreateTableEvent;
import org.apache.hadoop.hive.metastore.events.DropDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.DropPartitionEvent;
import org.apache.hadoop.hive.metastore.events.DropTableEvent;
import org.apache.hadoop.hive.metastore.events.InsertEvent;
import org.apache.hadoop.hive.metastore.events.ListenerEvent;
import org.apache.hadoop.hive.metastore.messaging.EventMessage.EventType;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;
import org.apache.hadoop.hive.metastore.messaging.PartitionFiles;

/**
 * A stand-in for Hive's DbNotificationListener (in the hcatalog jar, which pyspark does not
 * ship): it writes the same events, with the messages of Hive's own MessageFactory, to the
 * metastore's notification log, and cleans the log of events older than
 * hive.metastore.event.db.listener.timetolive as Hive does.
 *
 * Registered as a transactional listener, it runs inside the metastore call's transaction on
 * the call's own RawStore: an event is logged if and only if its change is committed.
 *
 * Unlike DbNotificationListener it does not list the files of a created table's or an added
 * partition's folder into the message: readers of the log take the partitions from the
 * metastore itself, and listing every new partition's folder would slow every add_partitions.
 * An INSERT's files, which its writer names, are in the message as Hive writes them.
 */
public class NotificationLogListener extends MetaStoreEventListener {
  // Hive 2.3 cleans once a minute; Hive 3 made the interval this setting.
  static final String CLEAN_INTERVAL = "hive.metastore.event.db.listener.clean.interval";
  private static final Object LOG_LOCK = new Object();
  private static Cleaner cleaner;

  private final MessageFactory messages = MessageFactory.getInstance();

  public NotificationLogListener(Configuration conf) throws MetaException {
    super(conf);
    createLogTable(conf);
    startCleaner(conf);
  }

  /**
   * Creates NOTIFICATION_LOG as Hive's own Derby schema script does, before DataNucleus would.
   *
   * The metastore's JDO metadata maps the message to LONGVARCHAR, which DataNucleus creates on
   * Derby as LONG VARCHAR (at most 32,700 characters): the event of one add_partitions of a few
   * dozen partitions would not fit, and the call would fail with it. Hive's schema script makes
   * the column a CLOB; an embedded Derby takes a second connection from the same process.
   */
  private static void createLogTable(Configuration conf) throws MetaException {
    String url = HiveConf.getVar(conf, HiveConf.ConfVars.METASTORECONNECTURLKEY);
    String user = HiveConf.getVar(conf, HiveConf.ConfVars.METASTORE_CONNECTION_USER_NAME);
    String password = HiveConf.getVar(conf, HiveConf.ConfVars.METASTOREPWD);
    try (Connection db = DriverManager.getConnection(url, user, password);
        Statement sql = db.createStatement()) {
      Integer type = messageColumnType(db.getMetaData());
      if (type != null && type == Types.CLOB) {
        return;
      }
      if (type != null) {
        // Only a reader of the log can have created it before this listener ran: it is empty.
        sql.execute("DROP TABLE NOTIFICATION_LOG");
      }
      sql.execute("CREATE TABLE NOTIFICATION_LOG (NL_ID BIGINT NOT NULL, DB_NAME VARCHAR(128),"
          + " EVENT_ID BIGINT NOT NULL, EVENT_TIME INTEGER NOT NULL,"
          + " EVENT_TYPE VARCHAR(32) NOT NULL, MESSAGE CLOB, TBL_NAME VARCHAR(256),"
          + " MESSAGE_FORMAT VARCHAR(16), CONSTRAINT NOTIFICATION_LOG_PK PRIMARY KEY (NL_ID))");
    } catch (SQLException e) {
      throw new MetaException("cannot create NOTIFICATION_LOG: " + e);
    }
  }

  private static Integer messageColumnType(DatabaseMetaData meta) throws SQLException {
    try (ResultSet columns = meta.getColumns(null, null, "NOTIFICATION_LOG", "MESSAGE")) {
      return columns.next() ? columns.getInt("DATA_TYPE") : null;
    }
  }

  private static synchronized void startCleaner(Configuration conf) {
    if (cleaner == null) {
      cleaner = new Cleaner(conf);
      cleaner.start();
    }
  }

  @Override
  public void onConfigChange(ConfigChangeEvent change) {
    if (change.getKey().equals(HiveConf.ConfVars.METASTORE_EVENT_DB_LISTENER_TTL.varname)) {
      Configuration conf = new Configuration(getConf());
      conf.set(change.getKey(), change.getNewValue());
      cleaner.setTimeToLive(conf);
    }
  }

  @Override
  public void onCreateDatabase(CreateDatabaseEvent event) throws MetaException {
    Database db = event.getDatabase();
    log(event, EventType.CREATE_DATABASE, messages.buildCreateDatabaseMessage(db).toString(),
        db.getName(), null);
  }

  @Override
  public void onDropDatabase(DropDatabaseEvent event) throws MetaException {
    Database db = event.getDatabase();
    log(event, EventType.DROP_DATABASE, messages.buildDropDatabaseMessage(db).toString(),
        db.getName(), null);
  }

  @Override
  public void onCreateTable(CreateTableEvent event) throws MetaException {
    Table table = event.getTable();
    log(event, EventType.CREATE_TABLE,
        messages.buildCreateTableMessage(table, noFiles()).toString(),
        table.getDbName(), table.getTableName());
  }

  @Override
  public void onAlterTable(AlterTableEvent event) throws MetaException {
    Table before = event.getOldTable();
    Table after = event.getNewTable();
    log(event, EventType.ALTER_TABLE, messages.buildAlterTableMessage(before, after).toString(),
        after.getDbName(), after.getTableName());
  }

  @Override
  public void onDropTable(DropTableEvent event) throws MetaException {
    Table table = event.getTable();
    log(event, EventType.DROP_TABLE, messages.buildDropTableMessage(table).toString(),
        table.getDbName(), table.getTableName());
  }

  @Override
  public void onAddPartition(AddPartitionEvent event) throws MetaException {
    Table table = event.getTable();
    Iterator<PartitionFiles> files = Collections.emptyIterator();
    log(event, EventType.ADD_PARTITION,
        messages.buildAddPartitionMessage(table, event.getPartitionIterator(), files).toString(),
        table.getDbName(), table.getTableName());
  }

  @Override
  public void onAlterPartition(AlterPartitionEvent event) throws MetaException {
    Partition before = event.getOldPartition();
    Partition after = event.getNewPartition();
    log(event, EventType.ALTER_PARTITION,
        messages.buildAlterPartitionMessage(event.getTable(), before, after).toString(),
        before.getDbName(), before.getTableName());
  }

  @Override
  public void onDropPartition(DropPartitionEvent event) throws MetaException {
    Table table = event.getTable();
    log(event, EventType.DROP_PARTITION,
        messages.buildDropPartitionMessage(table, event.getPartitionIterator()).toString(),
        table.getDbName(), table.getTableName());
  }

  @Override
  public void onInsert(InsertEvent event) throws MetaException {
    // Each file with its checksum when the writer sent them, as DbNotificationListener lists.
    List<String> files = new ArrayList<>();
    List<String> checksums = event.getFileChecksums();
    for (int i = 0; i < event.getFiles().size(); i++) {
      String checksum = checksums == null || checksums.isEmpty() ? null : checksums.get(i);
      files.add(ReplChangeManager.encodeFileUri(event.getFiles().get(i), checksum));
    }
    log(event, EventType.INSERT,
        messages.buildInsertMessage(event.getDb(), event.getTable(),
            event.getPartitionKeyValues(), files.iterator()).toString(),
        event.getDb(), event.getTable());
  }

  private static Iterator<String> noFiles() {
    return Collections.emptyIterator();
  }

  private void log(ListenerEvent cause, EventType type, String message, String db, String table)
      throws MetaException {
    NotificationEvent event = new NotificationEvent(0, now(), type.toString(), message);
    event.setDbName(db);
    event.setTableName(table);
    event.setMessageFormat(messages.getMessageFormat());
    // The call's own RawStore: the event joins the transaction of the change it records.
    synchronized (LOG_LOCK) {
      HMSHandler.getMSForConf(getConf()).addNotificationEvent(event);
    }
    if (event.isSetEventId()) {
      cause.putParameter(MetaStoreEventListenerConstants.DB_NOTIFICATION_EVENT_ID_KEY_NAME,
          Long.toString(event.getEventId()));
    }
  }

  private static int now() {
    return (int) Math.min(TimeUnit.MILLISECONDS.toSeconds(System.currentTimeMillis()),
        Integer.MAX_VALUE);
  }

  /** Deletes the events older than the time to live, every clean interval. */
  private static final class Cleaner extends Thread {
    private final Configuration conf;
    private final long intervalMillis;
    private volatile int timeToLiveSeconds;

    Cleaner(Configuration conf) {
      super("NotificationLogCleaner");
      setDaemon(true);
      this.conf = conf;
      // Not a setting Hive 2.3 knows, so HiveConf does not take it from a -D property.
      String interval = System.getProperty(CLEAN_INTERVAL, conf.get(CLEAN_INTERVAL, "60s"));
      Configuration settings = new Configuration(false);
      settings.set(CLEAN_INTERVAL, interval);
      this.intervalMillis = settings.getTimeDuration(CLEAN_INTERVAL, 0, TimeUnit.MILLISECONDS);
      setTimeToLive(conf);
    }

    void setTimeToLive(Configuration settings) {
      long seconds = HiveConf.getTimeVar(settings,
          HiveConf.ConfVars.METASTORE_EVENT_DB_LISTENER_TTL, TimeUnit.SECONDS);
      timeToLiveSeconds = (int) Math.min(seconds, Integer.MAX_VALUE);
    }

    @Override
    public void run() {
      while (true) {
        try {
          RawStore store = HMSHandler.getMSForConf(conf);
          store.cleanNotificationEvents(timeToLiveSeconds);
        } catch (Exception e) {
          // The next round tries again; a failed clean only leaves old events a while longer.
        }
        try {
          Thread.sleep(intervalMillis);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }
}
