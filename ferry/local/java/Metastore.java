package ferry.local;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;

/**
 * Hive's metastore server, with the transaction and lock tables in its database.
 *
 * <p>DataNucleus creates the metastore's own tables on first use, but not the tables of Hive's
 * transaction handler (TXNS, HIVE_LOCKS, NEXT_LOCK_ID, ...), which a production metastore gets
 * from Hive's schema scripts. Without them every {@code lock} call fails, and Iceberg's
 * HiveCatalog takes a table lock for each commit. Hive's own {@code TxnDbUtil} creates them in
 * the configured database; a database that has them already is left as it is.
 */
public final class Metastore {
    private Metastore() {}

    public static void main(String[] args) throws Throwable {
        try {
            TxnDbUtil.prepDb(new HiveConf(Metastore.class));
        } catch (Exception e) {
            if (e.getMessage() == null || !e.getMessage().contains("already exists")) {
                throw e;
            }
        }
        HiveMetaStore.main(args);
    }
}
